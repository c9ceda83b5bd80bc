/**
 * `POST /api/blueprints/wizard` (spec, Blueprints; Limits: up to 2 questions or 3 recommendations, one
 * round). The engine is `shared/blueprints/wizard.ts`, shared with the `blueprints` tool.
 */
import { runWizard, WizardBody, WizardResult } from '../../shared/blueprints/wizard.js';
import { defineRoute, successEnvelope } from '../http/route.js';

export const blueprintWizardRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/blueprints/wizard',
    operationId: 'blueprintWizard',
    summary: 'Recommend blueprints for a goal (or ask up to 2 clarifying questions first; one round only)',
    description:
      'Considers only blueprints the caller can execute: every built-in default (hidden ones too: they are startable by name) and every custom blueprint the caller can view. Without `answers`/`answer_context` the answer is `questions` (at most 2, each `id`, `text`) or `recommendations`; with them it is always `recommendations` (at most 3, each `blueprint_name`, `confidence` a number 0.0..1.0, `rationale`). `ranker` says who ranked: `model` (the active chat provider; its JSON is validated and repaired, `repairs` lists what was dropped or fixed) or `lexical` (token overlap over names, descriptions and phases; used without a provider, and as the fallback, with a `notice`, when the model answers nothing valid, fails, or is slower than PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS).',
    tags: ['blueprints'],
    access: { kind: 'authenticated', permission: null },
    body: WizardBody,
    responses: {
      200: { description: 'Questions or recommendations', schema: successEnvelope(WizardResult) },
    },
    handler: async (c) => ({
      success: true,
      data: await runWizard(
        { em: c.em, principal: c.principal, root: c.deps.config.blueprints.dir },
        { em: c.em, config: c.deps.config },
        c.body,
      ),
    }),
  }),
];
