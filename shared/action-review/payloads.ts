// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { z } from 'zod';
import type { ActionType } from './action-types.js';

/** The payload each action type accepts; checked at creation (400) and again before the effect runs. */
const id = z.string().trim().min(1).max(200);

export const PayloadSchemas = {
  'crm.merge.v1': z.object({
    object_kind: z.enum(['Lead', 'Contact', 'Account']),
    survivor_id: id,
    loser_ids: z.array(id).min(1).max(2),
    connection_name: id.optional(),
  }),
  'prover.request_finding_evidence.v1': z.object({ finding_id: id, evidence_request: z.string().min(1).max(10_000) }),
  'prover.approve_view_test_cases.v1': z.object({ view_id: id, test_case_ids: z.array(id).min(1).max(500) }),
  'learning.adopt.v1': z.object({
    learning_id: id,
    title: z.string().min(1).max(500),
    content: z.string().min(1).max(100_000),
    agent_ids: z
      .array(id)
      .min(1)
      .max(100)
      .optional()
      .describe(
        'The agents the learning is adopted for (it joins their instructions); omitted: the requesting agent when an agent raised it, else every agent of the tenant',
      ),
  }),
  'local_cli.run.v1': z.object({
    command: z.string().min(1).max(500).describe('Must be on the deployment allow-list (LOCAL_CLI_ALLOWED_COMMANDS)'),
    args: z.array(z.string().max(10_000)).max(100).default([]),
  }),
  'prover.approve_disposition_package.v1': z.object({ package_id: id, disposition: z.string().min(1).max(2_000) }),
  'prover.approve_composite_bundle.v1': z.object({ bundle_id: id, member_ids: z.array(id).min(1).max(500) }),
  'prover.decide_improvement_docket_entry.v1': z.object({
    entry_id: id,
    decision: z.enum(['accept', 'decline', 'defer']),
    note: z.string().max(10_000).optional(),
  }),
  'ticket.write.v1': z.object({
    title: z.string().min(1).max(500),
    body: z.string().max(100_000).default(''),
    project: id.optional(),
    labels: z.array(z.string().min(1).max(100)).max(50).default([]),
  }),
  'code_agent.start.v1': z.object({
    prompt: z.string().trim().min(1).max(20_000),
    ticket_key: z.string().trim().min(1).max(200).optional(),
  }),
  'kb.pull_request.v1': z.object({
    source_id: id,
    base_commit: z.string().regex(/^[0-9a-f]{40}$/),
    title: z.string().min(1).max(500),
    body: z.string().max(20_000).default(''),
    commit_message: z.string().min(1).max(2_000),
    staged_by: id,
    files: z
      .array(
        z.object({
          path: z.string().min(1).max(4096),
          status: z.enum(['A', 'M', 'D', 'R']),
          previous_path: z.string().min(1).max(4096).nullable().default(null),
          content: z.string().max(1_000_000),
        }),
      )
      .min(1)
      .max(200),
  }),
} as const satisfies Record<ActionType, z.ZodType>;

export type Payload<T extends ActionType> = z.output<(typeof PayloadSchemas)[T]>;
