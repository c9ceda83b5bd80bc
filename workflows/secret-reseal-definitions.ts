/**
 * The re-seal workflow's id and input. The API imports this module to start it, so it holds only
 * definitions and plain types.
 */

export const secretResealWorkflowId = (rotationId: string) => `secret-reseal/${rotationId}`;

/** Settings fixed at start, so replay never depends on the environment. */
export interface SecretResealInput {
  rotationId: string;
  /** Rows per batch (`PLATFORM_SECRETS_RESEAL_BATCH_SIZE`). */
  batchSize: number;
  /** Durable pause between batches (`PLATFORM_SECRETS_RESEAL_PAUSE_MS`; 0: none). */
  pauseMs: number;
  /** Where a continued-as-new run resumes: the pass, table index and cursor. */
  resume?: { pass: number; tableIndex: number; afterPk: string | null };
}

export interface SecretResealResult {
  rotationId: string;
  targetKid: string;
  status: 'completed' | 'failed';
  retired: string[];
  passes: number;
}
