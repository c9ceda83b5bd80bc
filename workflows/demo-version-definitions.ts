// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import { DemoCodes } from '../shared/demo/error-codes.js';

/** Hosted demo versions and runs: workflow ids, inputs and the names the API and activities share. */

/** One validation workflow per version; the version id is the resource id. */
export const demoVersionWorkflowId = (versionId: string) => `demo-version/${versionId}`;
/** One workflow per run. */
export const demoRunWorkflowId = (runId: string) => `demo-run/${runId}`;

export const DEMO_VERSION_STATUSES = ['draft', 'validating', 'ready', 'failed'] as const;
export type DemoVersionStatus = (typeof DEMO_VERSION_STATUSES)[number];
export const DEMO_RUN_STATUSES = ['prepared', 'running', 'completed', 'failed', 'incomplete'] as const;
export type DemoRunStatus = (typeof DEMO_RUN_STATUSES)[number];

/** The profiles a demo version may name; any other ends validation `DEMO_VERSION_PROFILE_UNAVAILABLE`. */
export const DEMO_PROFILES = ['standard', 'rca', 'aum', 'optimization', 'presenter-missions', 'ticket-rca'] as const;

export const DEMO_VERSION_BINDING_INVALID = DemoCodes.DEMO_VERSION_BINDING_INVALID;
export const DEMO_VERSION_PROFILE_UNAVAILABLE = DemoCodes.DEMO_VERSION_PROFILE_UNAVAILABLE;

export const DEMO_BINDING_KINDS = ['agents', 'blueprints', 'connections'] as const;
export type DemoBindingKind = (typeof DEMO_BINDING_KINDS)[number];
export type DemoBindings = Partial<Record<DemoBindingKind, string[]>>;

/** One step of a run: check that a bound agent, blueprint or connection still resolves. */
export interface DemoRunStep {
  kind: 'agent' | 'blueprint' | 'connection';
  target: string;
  status: 'pending' | 'done' | 'skipped' | 'failed';
  detail: string | null;
}

export interface DemoVersionInput {
  versionId: string;
}
export interface DemoRunInput {
  runId: string;
}
