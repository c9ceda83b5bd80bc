/**
 * Built-in default blueprints: shipped with the code, read-only (they cannot be exported, renamed,
 * deleted or edited), visible to every authenticated caller. `platform-self-check` is hidden: it is
 * omitted from the inventory but its detail still answers by name (it stays startable). Their phases
 * name the built-in agents (`eve`, `adam`; every tenant has them), so a mission of one runs as shipped.
 */
import type { BlueprintManifest } from './manifest.js';

export interface DefaultBlueprint {
  blueprint_id: string;
  manifest: BlueprintManifest;
  /** Working-copy files besides the manifest (relative path → text). */
  files: Record<string, string>;
}

const origin = { source_type: 'builtin' as const, created_by_user_id: null };

export const DEFAULT_BLUEPRINTS: readonly DefaultBlueprint[] = [
  {
    blueprint_id: 'bp_default_data_quality_audit',
    manifest: {
      schema_version: 1,
      name: 'data-quality-audit',
      hidden: false,
      blueprint: { short_description: 'Profile tables, find anomalies and report them', default_mode: 'interactive' },
      origin,
      phases: [
        {
          id: 'profile',
          name: 'Profile',
          goal: 'Profile the chosen tables: row counts, null rates, distinct values',
          skills: ['warehouse_query'],
          agents: ['eve'],
          prompts: [{ file: 'prompts/profile.md' }],
          files: [],
        },
        {
          id: 'report',
          name: 'Report',
          goal: 'Summarise anomalies with the queries that show them',
          skills: [],
          agents: ['eve'],
          prompts: [{ text: 'Write the findings as a short report, one section per table.' }],
          files: ['templates/report.md'],
        },
      ],
    },
    files: {
      'prompts/profile.md': 'For each table, run one profiling query per column family and keep the SQL.\n',
      'templates/report.md': '# Data quality report\n\n## Findings\n',
    },
  },
  {
    blueprint_id: 'bp_default_pipeline_incident_triage',
    manifest: {
      schema_version: 1,
      name: 'pipeline-incident-triage',
      hidden: false,
      blueprint: { short_description: 'Triage a failed pipeline run and propose a fix', default_mode: 'autonomous' },
      origin,
      phases: [
        {
          id: 'diagnose',
          name: 'Diagnose',
          goal: 'Find the failing step and its cause from the run logs',
          skills: ['etl_tools'],
          agents: ['adam'],
          prompts: [{ text: 'Start from the last failed run; quote the error line.' }],
          files: [],
        },
        {
          id: 'propose',
          name: 'Propose',
          goal: 'Propose a fix and the check that proves it',
          skills: [],
          agents: ['adam'],
          prompts: [{ text: 'Propose a fix for the cause you found and the check that proves it works.' }],
          files: [],
        },
      ],
    },
    files: {},
  },
  {
    blueprint_id: 'bp_default_platform_self_check',
    manifest: {
      schema_version: 1,
      name: 'platform-self-check',
      hidden: true,
      blueprint: { short_description: 'Internal: checks the platform connections answer', default_mode: 'autonomous' },
      origin,
      phases: [
        {
          id: 'check',
          name: 'Check',
          goal: 'List the configured connections and test each one',
          skills: [],
          agents: ['eve'],
          prompts: [{ text: 'List the connections configured on this platform and say whether each one answers.' }],
          files: [],
        },
      ],
    },
    files: {},
  },
];

export function findDefault(name: string): DefaultBlueprint | undefined {
  return DEFAULT_BLUEPRINTS.find((d) => d.manifest.name === name);
}
