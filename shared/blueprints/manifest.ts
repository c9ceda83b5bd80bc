/**
 * The blueprint manifest (`blueprint_manifest.yaml`, at the root of each blueprint's working copy).
 * The spec leaves its shape open; this is ours (documented in docs/architecture.md, Blueprints):
 *
 * ```yaml
 * schema_version: 1
 * name: churn-review              # the blueprint_name; lowercase letters, digits, `-`, `_`
 * created_by: user-42             # owner (else legacy blueprint.created_by, else origin.created_by_user_id)
 * hidden: false                   # built-ins only: omitted from the inventory, still startable by name
 * blueprint:
 *   short_description: Weekly churn review
 *   default_mode: interactive     # interactive | autonomous (how a mission from it starts)
 *   created_by: user-42           # legacy owner field (read, never written)
 * origin:                         # where it came from (shared by inventory `origin` and detail `blueprint.origin`)
 *   source_type: local            # local | import | builtin
 *   created_by_user_id: user-42
 *   imported_at: 2026-11-25T04:00:00Z
 *   imported_by_user_id: user-7
 *   source_blueprint_id: bp_…
 * phases:
 *   - id: gather                  # unique within the blueprint
 *     name: Gather
 *     goal: Collect last week's churned accounts
 *     skills: [warehouse_query]
 *     prompts:
 *       - text: Query the churn table   # inline, or
 *       - file: prompts/gather.md        # a file of the working copy
 *     files: [templates/report.md]       # files of the working copy this phase uses
 *     # Optional, for missions (shared/missions/; absent fields keep older manifests valid):
 *     agents: [analyst]                  # agents whose threads the phase opens (the mission's first is its root thread)
 *     goals:                             # else one goal from `goal` (id = the phase id)
 *       - id: churn-list
 *         name: Churned accounts listed
 *         acceptance_criterion: One row per churned account
 *     questions:                         # a phase with questions waits for people before it completes
 *       - id: threshold
 *         content: Which churn threshold applies?
 *         priority: high                 # high | normal (default) | low
 *         category: scope
 *         expected_response_type: choice # text | choice | boolean
 *         options: ['30 days', '60 days']
 *         recommended: '30 days'
 * ```
 */
import { parse, stringify } from 'yaml';
import { z } from 'zod';

export const MANIFEST_FILE = 'blueprint_manifest.yaml';
export const EXPORT_MANIFEST_FILE = 'blueprint_export_manifest.yaml';

/** A blueprint name: also the path segment of every route. */
export const BlueprintName = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    'lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 63',
  )
  .describe('Blueprint name (lowercase letters, digits, "-", "_"; at most 63)');

/** A relative path inside a working copy: no absolute path, no `..`, no backslash, no NUL. */
export const RELATIVE_PATH_PATTERN = /^[^./\\:][^/\\:]*(?:\/[^./\\:][^/\\:]*)*$/;
export const RelativeFilePath = z
  .string()
  .min(1)
  .max(512)
  .regex(
    RELATIVE_PATH_PATTERN,
    'a relative path inside the blueprint: "/"-separated segments, none starting with ".", no "\\" or ":"',
  );

export function isSafeRelativePath(p: string): boolean {
  if (!p || p.includes('\0') || p.includes('\\')) return false;
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) return false;
  const parts = p.split('/');
  return parts.every((s) => s !== '' && s !== '.' && s !== '..' && s.toLowerCase() !== '.git');
}

export const DEFAULT_MODES = ['interactive', 'autonomous'] as const;
export const DefaultMode = z.enum(DEFAULT_MODES);

export const OriginSchema = z
  .object({
    source_type: z.enum(['local', 'import', 'builtin', 'managed_source']),
    created_by_user_id: z.string().nullable(),
    // managed_source (remote-backed, shared/blueprints/remote.ts): computed from the row, never read from a manifest.
    source_id: z.string().optional(),
    repo_path: z.string().optional(),
    commit_sha: z.string().nullable().optional(),
    imported_at: z.string().optional(),
    imported_by_user_id: z.string().optional(),
    source_blueprint_id: z.string().nullable().optional(),
  })
  .meta({ id: 'BlueprintOrigin' });
export type BlueprintOrigin = z.infer<typeof OriginSchema>;

const Prompt = z.union([
  z.object({ text: z.string().min(1).max(20000) }).strict(),
  z.object({ file: RelativeFilePath }).strict(),
]);

const PhaseGoal = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/),
    name: z.string().min(1).max(500),
    acceptance_criterion: z.string().min(1).max(4000).optional(),
  })
  .strict();

const PhaseQuestion = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/),
    content: z.string().min(1).max(4000),
    priority: z.enum(['high', 'normal', 'low']).optional(),
    category: z.string().min(1).max(200).optional(),
    expected_response_type: z.enum(['text', 'choice', 'boolean']).optional(),
    options: z.array(z.string().min(1).max(500)).max(50).optional(),
    recommended: z.string().min(1).max(500).optional(),
  })
  .strict();

export const PhaseSchema = z
  .object({
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/)
      .describe('Phase identifier (keep it unique within the blueprint)'),
    name: z.string().min(1).max(200),
    goal: z.string().min(1).max(4000),
    skills: z.array(z.string().min(1).max(200)).max(100).default([]),
    prompts: z.array(Prompt).max(100).default([]),
    files: z.array(RelativeFilePath).max(1000).default([]),
    agents: z.array(z.string().min(1).max(200)).max(20).optional().describe('Agents whose threads the phase opens'),
    goals: z.array(PhaseGoal).max(100).optional().describe('Goals of the phase (else one goal from `goal`)'),
    questions: z
      .array(PhaseQuestion)
      .max(50)
      .optional()
      .describe('Questions for people; the phase completes only once they are answered'),
  })
  .strict()
  .meta({ id: 'BlueprintPhase' });
export type BlueprintPhase = z.infer<typeof PhaseSchema>;

/** Phases of one blueprint, in order. */
export const PhaseList = z.array(PhaseSchema).max(100);

export const ManifestSchema = z
  .object({
    schema_version: z.literal(1).default(1),
    name: BlueprintName,
    created_by: z.string().min(1).max(200).optional(),
    hidden: z.boolean().default(false),
    blueprint: z
      .object({
        short_description: z.string().max(500).default(''),
        default_mode: DefaultMode.default('interactive'),
        created_by: z.string().min(1).max(200).optional(),
      })
      .strict()
      .default({ short_description: '', default_mode: 'interactive' }),
    origin: OriginSchema.optional(),
    phases: PhaseList.default([]),
  })
  .strict()
  .meta({ id: 'BlueprintManifest' });
export type BlueprintManifest = z.infer<typeof ManifestSchema>;

/** Owner: top-level `created_by`, else legacy `blueprint.created_by`, else `origin.created_by_user_id`. */
export function resolveOwner(m: BlueprintManifest): string | null {
  return m.created_by ?? m.blueprint.created_by ?? m.origin?.created_by_user_id ?? null;
}

export class ManifestError extends Error {
  constructor(
    message: string,
    readonly issues: string[],
  ) {
    super(message);
  }
}

export function parseManifest(text: string): BlueprintManifest {
  let raw: unknown;
  try {
    raw = parse(text, { maxAliasCount: 50 });
  } catch (err) {
    throw new ManifestError(`${MANIFEST_FILE} is not valid YAML`, [(err as Error).message.split('\n')[0]!]);
  }
  const r = ManifestSchema.safeParse(raw);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ManifestError(`${MANIFEST_FILE} does not match the manifest schema`, issues);
  }
  return r.data;
}

export function serializeManifest(m: BlueprintManifest): string {
  return stringify(m, { lineWidth: 0 });
}
