/** The hand-back workflows' inputs and results: plain types, imported by the sweep's Schedule and the workflow types' table. */

export interface HandbackInput {
  proposalId: string;
  /** Delivery attempts before this run gives up and leaves the hand-back to the sweep. */
  maxAttempts: number;
}

export interface HandbackResult {
  proposalId: string;
  delivered: boolean;
  messageId: string | null;
}

export interface HandbackSweepInput {
  /** How many pending hand-backs one sweep handles at most. */
  limit?: number;
}

export interface HandbackSweepResult {
  pending: number;
  delivered: number;
  failed: number;
}
