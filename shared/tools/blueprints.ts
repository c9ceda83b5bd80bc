import { z } from 'zod';
import { BlueprintName } from '../blueprints/manifest.js';
import { detail, inventory, open, type Ctx } from '../blueprints/service.js';
import { runWizard, WizardBody } from '../blueprints/wizard.js';
import { defineTool } from './registry.js';
import { BlueprintsResult } from './results.js';
import { runWipToolAction, wipToolActions, type WipToolInput } from './blueprint-wip.js';

const BlueprintsInput = z.discriminatedUnion('action', [
  z.object({ action: z.literal('LIST') }).strict(),
  z
    .object({
      action: z.literal('GET'),
      blueprint_name: BlueprintName,
      blueprint_id: z.string().min(1).max(200).optional().describe('Pins the identity (409 on mismatch)'),
    })
    .strict(),
  WizardBody.extend({ action: z.literal('RECOMMEND') }).strict(),
  ...wipToolActions,
]);

/**
 * The group `blueprints`: LIST answers what `GET /api/blueprints/` answers (`{blueprints}`: what the
 * caller can view, hidden built-ins omitted), GET what `GET /api/blueprints/{name}` answers (manifest,
 * phases, access flags; 404 for a blueprint the caller cannot view), RECOMMEND what
 * `POST /api/blueprints/wizard` answers (same engine, same limits). Each result is the route's `data`.
 */
export const blueprintsTool = defineTool({
  name: 'blueprints',
  description:
    'Blueprints (mission templates): LIST the ones you can view; GET (blueprint_name) a manifest with its phases; RECOMMEND (goal, answers?, answer_context?) up to 3 blueprints for a goal, or up to 2 clarifying questions first (one round: with answers it always recommends). Edit a blueprint in a work-in-progress session: WIP_OPEN (blueprint_name, ttl_seconds?, note?), WIP_EDIT (blueprint_name, session_id, files?: [{path, content}], remove?, message?) commits on the branch wip/<session_id>, WIP_COMMIT applies the edits to the working copy as one commit, WIP_DISCARD drops them, WIP_LIST lists sessions.',
  input: BlueprintsInput,
  result: BlueprintsResult,
  principalKinds: ['agent', 'person'],
  async handler({ input, principal, deps, em }) {
    const ctx: Ctx = { em, principal, root: deps.config.blueprints.dir };
    if (input.action === 'LIST') return { blueprints: await inventory(ctx) };
    if (input.action === 'GET') {
      const { b, flags } = await open(ctx, input.blueprint_name, 'view', input.blueprint_id);
      return detail(ctx, b, flags);
    }
    if (input.action.startsWith('WIP_')) return runWipToolAction(ctx, deps, input as WipToolInput);
    const { action: _action, ...wizard } = input as Extract<typeof input, { action: 'RECOMMEND' }>;
    return runWizard(ctx, { em, config: deps.config }, wizard);
  },
});
