/**
 * The action types beside the spec's list (issue 31 item 9): `code_agent.start.v1` and
 * `kb.pull_request.v1` stay, and every published place that lists action types says so and why.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApi } from '../../api/http/openapi.js';
import { allRoutes } from '../../api/routes/index.js';
import {
  ACTION_TYPES,
  ACTION_TYPE_DESCRIPTION,
  PLATFORM_ACTION_TYPES,
  SPEC_ACTION_TYPES,
} from '../../shared/action-review/action-types.js';
import { actionReviewTool } from '../../shared/tools/action-review.js';

const REASON = 'agents that start coding agents or open pull requests are governed by a person';

const mentionsBoth = (text: unknown) => {
  expect(text).toEqual(expect.stringContaining('`code_agent.start.v1`'));
  expect(text).toEqual(expect.stringContaining('`kb.pull_request.v1`'));
  expect(text).toEqual(expect.stringContaining(REASON));
};

describe('action types kept beside the spec list', () => {
  it("are the spec's nine plus code_agent.start.v1 and kb.pull_request.v1", () => {
    // The spec's nine (spec, "Action Review proposal"): versioned names of five families, none of ours among them.
    expect(SPEC_ACTION_TYPES).toHaveLength(9);
    for (const t of SPEC_ACTION_TYPES) expect(t).toMatch(/^(crm|prover|learning|local_cli|ticket)\.[a-z_.]+\.v1$/);
    expect(SPEC_ACTION_TYPES.filter((t) => t.startsWith('prover.'))).toHaveLength(5);
    expect(PLATFORM_ACTION_TYPES).toEqual(['code_agent.start.v1', 'kb.pull_request.v1']);
    expect(ACTION_TYPES).toEqual([...SPEC_ACTION_TYPES, ...PLATFORM_ACTION_TYPES]);
    mentionsBoth(ACTION_TYPE_DESCRIPTION);
  });

  it('are documented with the reason wherever the OpenAPI document lists action types', () => {
    const doc = buildOpenApi(allRoutes(), { title: 't', version: '0', description: '' }) as any;
    const create = doc.paths['/api/action-review/proposals'].post;
    mentionsBoth(create.description);
    const list = doc.paths['/api/action-review/proposals'].get;
    const param = list.parameters.find((p: { name: string }) => p.name === 'action_type');
    mentionsBoth(param.description ?? param.schema.description);
    for (const id of ['ActionReviewProposalRow', 'ActionReviewProposal'])
      mentionsBoth(doc.components.schemas[id].properties.action_type.description);
  });

  it('are documented with the reason in the action_review tool schema', () => {
    const schema = z.toJSONSchema(actionReviewTool.input) as any;
    const create = (schema.oneOf ?? schema.anyOf).find((v: any) => v.properties.action.const === 'CREATE_PROPOSAL');
    mentionsBoth(create.properties.action_type.description);
    expect(create.properties.action_type.enum).toEqual([...ACTION_TYPES]);
  });
});
