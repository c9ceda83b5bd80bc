/**
 * The blueprint wizard (spec, Blueprints: `POST /api/blueprints/wizard`; Limits: up to 2 clarifying
 * questions or up to 3 recommendations, one round). One engine serves the route and the `blueprints`
 * tool's RECOMMEND action.
 *
 * Candidates are the blueprints the caller can execute: every built-in default (hidden ones included,
 * since they are startable by name) and every custom blueprint the caller can view (blueprint access:
 * starting a mission from a blueprint needs view access). Nothing else reaches the model or the answer.
 *
 * Ranking: with an admitted active chat provider, the model gets a compact candidate list (name, short
 * description, phase names) and must answer JSON. Its answer is never passed through: it is parsed
 * and repaired where that is safe (confidence clamped to 0..1, numeric strings coerced, unknown
 * blueprints and duplicates dropped, lists truncated to 3 recommendations / 2 questions, text capped),
 * refused item by item where not (a boolean or missing confidence drops that recommendation), and
 * when nothing valid is left, or the model answers questions in the second round, fails or is slower
 * than `PLATFORM_BLUEPRINT_WIZARD_TIMEOUT_MS`, the lexical ranker answers instead (`ranker: lexical`
 * and a `notice`). Without a provider the lexical ranker answers directly.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { customWithFlags } from './access.js';
import { DEFAULT_BLUEPRINTS } from './defaults.js';
import type { BlueprintManifest } from './manifest.js';
import { listRows } from './store.js';
import type { AppConfig } from '../config.js';
import { activeProviders } from '../llm/active-provider.js';
import { LlmError } from '../llm/client.js';
import type { Ctx } from './service.js';

export const WIZARD_LIMITS = { maxQuestions: 2, maxRecommendations: 3, maxRationale: 1000, maxQuestionText: 500 };

const Text = z.string().min(1).max(4000);
export const WizardBody = z
  .object({
    goal: Text.describe('What the caller wants to achieve, in free text'),
    answers: z
      .array(
        z
          .object({
            question_id: z.string().min(1).max(100),
            answer: Text,
          })
          .strict(),
      )
      .max(WIZARD_LIMITS.maxQuestions)
      .optional()
      .describe('Answers to the questions of the first round (one round only: with answers the wizard recommends)'),
    answer_context: z
      .array(
        z
          .object({
            question_id: z.string().min(1).max(100),
            question_text: Text.describe('The original question text'),
            answer: Text,
          })
          .strict(),
      )
      .max(WIZARD_LIMITS.maxQuestions)
      .optional()
      .describe('The same answers, each with the question text it answers'),
  })
  .strict();
export type WizardInput = z.infer<typeof WizardBody>;

export const WizardResult = z.object({
  type: z.enum(['questions', 'recommendations']),
  questions: z
    .array(z.object({ id: z.string(), text: z.string() }))
    .max(WIZARD_LIMITS.maxQuestions)
    .optional(),
  recommendations: z
    .array(
      z.object({
        blueprint_name: z.string(),
        confidence: z.number().min(0).max(1).describe('0.0 to 1.0 inclusive; never a boolean'),
        rationale: z.string(),
      }),
    )
    .max(WIZARD_LIMITS.maxRecommendations)
    .optional(),
  ranker: z.enum(['model', 'lexical']).describe('model: the active chat provider ranked; lexical: token overlap'),
  candidate_count: z.number().int().describe('How many blueprints the caller can execute were considered'),
  notice: z.string().optional().describe('Why the lexical ranker answered although a model is configured'),
  repairs: z.array(z.string()).optional().describe("What was repaired or dropped from the model's answer"),
});
export type WizardAnswer = z.infer<typeof WizardResult>;

export interface Candidate {
  name: string;
  short_description: string;
  phases: Array<{ name: string; goal: string }>;
}

function candidateOf(m: BlueprintManifest): Candidate {
  return {
    name: m.name,
    short_description: m.blueprint.short_description,
    phases: m.phases.map((p) => ({ name: p.name, goal: p.goal })),
  };
}

/** The blueprints the caller can execute (see the module comment), custom ones shadowing defaults of the same name. */
export async function executableCandidates(ctx: Ctx): Promise<Candidate[]> {
  const rows = await listRows(ctx.em, ctx.principal.tenant);
  const out: Candidate[] = [];
  for (const d of DEFAULT_BLUEPRINTS)
    if (!rows.some((r) => r.name === d.manifest.name)) out.push(candidateOf(d.manifest));
  for (const { b, flags } of await customWithFlags(ctx, rows)) if (flags.can_view) out.push(candidateOf(b.manifest));
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

// ---- lexical ranker ----

const STOP = new Set(
  'the and for with that this from into over under about what which when where while have has had are was were will would should could can our your their them they you we its it not but all any each per via use using want need like just some more most also than then there here how who why get make run'.split(
    ' ',
  ),
);

export function tokens(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 3 || STOP.has(raw)) continue;
    out.add(raw.length > 4 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw);
  }
  return out;
}

function queryText(input: WizardInput): string {
  return [
    input.goal,
    ...(input.answers ?? []).map((a) => a.answer),
    ...(input.answer_context ?? []).flatMap((a) => [a.question_text, a.answer]),
  ].join('\n');
}

const hasAnswers = (input: WizardInput) => (input.answers?.length ?? 0) + (input.answer_context?.length ?? 0) > 0;

/**
 * Token overlap: each distinct query token counts 1 when it appears in the blueprint's name or short
 * description and 0.5 when only in a phase name or goal; confidence = that sum over the number of
 * query tokens (0..1, two decimals). The top 3 with a positive score are recommended.
 */
export function lexicalRank(
  input: WizardInput,
  candidates: Candidate[],
): Array<{ blueprint_name: string; confidence: number; rationale: string }> {
  const q = tokens(queryText(input));
  if (!q.size) return [];
  const scored = candidates.map((c) => {
    const head = tokens(`${c.name.replace(/[-_]/g, ' ')} ${c.short_description}`);
    const body = tokens(c.phases.map((p) => `${p.name} ${p.goal}`).join(' '));
    let score = 0;
    const hits: string[] = [];
    for (const t of q) {
      if (head.has(t)) score += 1;
      else if (body.has(t)) score += 0.5;
      else continue;
      hits.push(t);
    }
    return { c, score, hits };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.c.name.localeCompare(b.c.name))
    .slice(0, WIZARD_LIMITS.maxRecommendations)
    .map((s) => ({
      blueprint_name: s.c.name,
      confidence: Math.min(1, Math.round((s.score / q.size) * 100) / 100),
      rationale: `Shares ${s.hits.length} term${s.hits.length === 1 ? '' : 's'} with the goal (${s.hits
        .slice(0, 6)
        .map((h) => `"${h}"`)
        .join(', ')}) in its name, description or phases.`,
    }));
}

const CLARIFY = [
  { id: 'q_data', text: 'Which data, system or pipeline is this about?' },
  { id: 'q_outcome', text: 'What should exist when the work is done (a report, a fix, a changed pipeline)?' },
];

function lexicalAnswer(input: WizardInput, candidates: Candidate[], notice?: string): WizardAnswer {
  const recs = lexicalRank(input, candidates);
  const base = { ranker: 'lexical' as const, candidate_count: candidates.length, ...(notice ? { notice } : {}) };
  // First round and nothing matches: ask (the one allowed round); with answers: always recommend.
  if (!recs.length && !hasAnswers(input) && candidates.length)
    return { type: 'questions', questions: CLARIFY, ...base };
  return { type: 'recommendations', recommendations: recs, ...base };
}

// ---- the model ----

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/** Strips control characters (newlines and tabs become spaces) and caps the length of model text. */
function clean(text: string, max: number): string {
  return text.replace(CONTROL, ' ').trim().slice(0, max);
}

const NUMERIC = /^\s*-?(?:\d+(?:\.\d*)?|\.\d+)\s*$/;

/** Validates and repairs the model's JSON (see the module comment); null when nothing usable is left. */
export function repairModelAnswer(
  raw: unknown,
  candidates: Candidate[],
  mustRecommend: boolean,
): { answer: Omit<WizardAnswer, 'ranker' | 'candidate_count'>; repairs: string[] } | null {
  const repairs: string[] = [];
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  const known = new Set(candidates.map((c) => c.name));
  if (Array.isArray(o.recommendations) && (o.type === 'recommendations' || o.type === undefined || mustRecommend)) {
    const recs: Array<{ blueprint_name: string; confidence: number; rationale: string }> = [];
    for (const item of o.recommendations as unknown[]) {
      if (!item || typeof item !== 'object') {
        repairs.push('dropped a recommendation that is not an object');
        continue;
      }
      const r = item as Record<string, unknown>;
      const name = typeof r.blueprint_name === 'string' ? r.blueprint_name.trim() : null;
      if (!name || !known.has(name)) {
        repairs.push(`dropped unknown blueprint ${JSON.stringify(clean(String(r.blueprint_name ?? ''), 80))}`);
        continue;
      }
      if (recs.some((x) => x.blueprint_name === name)) {
        repairs.push(`dropped a duplicate of ${name}`);
        continue;
      }
      let confidence: number;
      if (typeof r.confidence === 'number' && Number.isFinite(r.confidence)) confidence = r.confidence;
      else if (typeof r.confidence === 'string' && NUMERIC.test(r.confidence)) {
        confidence = Number(r.confidence);
        repairs.push(`coerced the confidence of ${name} from a string`);
      } else {
        repairs.push(`dropped ${name}: confidence is ${typeof r.confidence}, not a number`);
        continue;
      }
      if (confidence < 0 || confidence > 1) {
        repairs.push(`clamped the confidence of ${name} to 0..1`);
        confidence = Math.min(1, Math.max(0, confidence));
      }
      const rationale = typeof r.rationale === 'string' ? clean(r.rationale, WIZARD_LIMITS.maxRationale) : '';
      recs.push({ blueprint_name: name, confidence, rationale });
    }
    if (!recs.length) return null;
    recs.sort((a, b) => b.confidence - a.confidence);
    if (recs.length > WIZARD_LIMITS.maxRecommendations) {
      repairs.push(`kept the ${WIZARD_LIMITS.maxRecommendations} most confident of ${recs.length} recommendations`);
      recs.length = WIZARD_LIMITS.maxRecommendations;
    }
    return { answer: { type: 'recommendations', recommendations: recs }, repairs };
  }
  if (!mustRecommend && Array.isArray(o.questions) && (o.type === 'questions' || o.type === undefined)) {
    const qs: Array<{ id: string; text: string }> = [];
    for (const item of o.questions as unknown[]) {
      if (!item || typeof item !== 'object') continue;
      const q = item as Record<string, unknown>;
      const text = typeof q.text === 'string' ? clean(q.text, WIZARD_LIMITS.maxQuestionText) : '';
      if (!text) {
        repairs.push('dropped a question without text');
        continue;
      }
      const rawId = typeof q.id === 'string' || typeof q.id === 'number' ? String(q.id) : '';
      let id = rawId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 100);
      if (!id || qs.some((x) => x.id === id)) id = `q${qs.length + 1}`;
      qs.push({ id, text });
    }
    if (!qs.length) return null;
    if (qs.length > WIZARD_LIMITS.maxQuestions) {
      repairs.push(`kept the first ${WIZARD_LIMITS.maxQuestions} of ${qs.length} questions`);
      qs.length = WIZARD_LIMITS.maxQuestions;
    }
    return { answer: { type: 'questions', questions: qs }, repairs };
  }
  return null;
}

/** The first JSON object in the model's text (bare, or inside a ``` fence); undefined when none parses. */
export function extractJson(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  const start = body.indexOf('{');
  const end = body.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(body.slice(start, end + 1));
  } catch {
    return undefined;
  }
}

function prompt(input: WizardInput, candidates: Candidate[], mustRecommend: boolean): string {
  const list = candidates
    .map(
      (c) =>
        `- ${c.name}: ${c.short_description || '(no description)'}${c.phases.length ? ` [phases: ${c.phases.map((p) => p.name).join(', ')}]` : ''}`,
    )
    .join('\n');
  return [
    'You pick mission blueprints for a data team. Answer with ONE JSON object and nothing else.',
    mustRecommend
      ? 'The caller already answered your questions: you MUST recommend.'
      : `Either ask at most ${WIZARD_LIMITS.maxQuestions} clarifying questions, or recommend.`,
    `Recommend: {"type":"recommendations","recommendations":[{"blueprint_name":"<one of the names below>","confidence":<number 0.0..1.0>,"rationale":"<one sentence>"}]} with at most ${WIZARD_LIMITS.maxRecommendations} items.`,
    ...(mustRecommend ? [] : ['Ask: {"type":"questions","questions":[{"id":"q1","text":"<question>"}]}']),
    'Only these blueprints exist:',
    list,
  ].join('\n');
}

function userMessage(input: WizardInput): string {
  const ctxById = new Map((input.answer_context ?? []).map((a) => [a.question_id, a]));
  const lines = [`Goal: ${input.goal}`];
  for (const a of input.answer_context ?? []) lines.push(`Q (${a.question_id}): ${a.question_text}\nA: ${a.answer}`);
  for (const a of input.answers ?? []) if (!ctxById.has(a.question_id)) lines.push(`A (${a.question_id}): ${a.answer}`);
  return lines.join('\n');
}

class WizardTimeout extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WizardTimeout()), ms);
  });
  p.catch(() => {}); // a late failure after the timeout is not an unhandled rejection
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export interface WizardDeps {
  em: EntityManager;
  config: AppConfig;
}

/** Answers one wizard round for the caller (see the module comment). */
export async function runWizard(ctx: Ctx, deps: WizardDeps, input: WizardInput): Promise<WizardAnswer> {
  const candidates = await executableCandidates(ctx);
  const mustRecommend = hasAnswers(input);
  if (!candidates.length)
    return { type: 'recommendations', recommendations: [], ranker: 'lexical', candidate_count: 0 };
  const active = await activeProviders(deps.config).resolve(deps.em, ctx.principal.tenant);
  if (active.source === 'none' || !active.client || !active.chatModel) return lexicalAnswer(input, candidates);
  if (active.admission === 'deny')
    return lexicalAnswer(input, candidates, 'The active chat provider is not admitted; the lexical ranker answered.');
  let content: string | null;
  try {
    const r = await withTimeout(
      active.chat(
        { em: deps.em, tenant: ctx.principal.tenant, purpose: 'wizard' },
        [
          { role: 'system', content: prompt(input, candidates, mustRecommend) },
          { role: 'user', content: userMessage(input) },
        ],
        [],
      ),
      deps.config.blueprints.wizardTimeoutMs,
    );
    content = r.content;
  } catch (err) {
    if (err instanceof WizardTimeout)
      return lexicalAnswer(
        input,
        candidates,
        `The model did not answer within ${deps.config.blueprints.wizardTimeoutMs} ms; the lexical ranker answered.`,
      );
    // The metered call refuses without calling the model once the demo budget cap is reached.
    if (err instanceof LlmError && err.failure.kind === 'budget_exhausted')
      return lexicalAnswer(input, candidates, 'The language-model budget is used up; the lexical ranker answered.');
    return lexicalAnswer(input, candidates, 'The model call failed; the lexical ranker answered.');
  }
  const repaired = repairModelAnswer(extractJson(content ?? ''), candidates, mustRecommend);
  if (!repaired)
    return lexicalAnswer(
      input,
      candidates,
      mustRecommend
        ? "The model's answer held no valid recommendation; the lexical ranker answered."
        : "The model's answer held no valid recommendation or question; the lexical ranker answered.",
    );
  return {
    ...repaired.answer,
    ranker: 'model',
    candidate_count: candidates.length,
    ...(repaired.repairs.length ? { repairs: repaired.repairs } : {}),
  };
}
