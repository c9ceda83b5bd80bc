import type { ProviderKind } from './provider-kinds.js';

/**
 * Spec, Limits, "Embedding input windows": warning thresholds of 512 characters for the warehouse-AI
 * provider and 8000 for proxy-routed providers; the full chunk is still stored. Nothing is truncated
 * or refused here: the text goes to the provider whole (which may cut it to its own window), and a
 * caller that stores chunks stores them whole, with a warning saying how many exceeded the window.
 */
export const EMBEDDING_INPUT_WINDOWS: Partial<Record<ProviderKind, number>> = {
  warehouse_ai: 512,
  proxy: 8000,
};

export interface EmbeddingWindowWarning {
  /** Characters beyond which the provider's window warns. */
  threshold: number;
  /** How many of the inputs exceed it, and the longest input's length. */
  over: number;
  longest: number;
  message: string;
}

/** The warning for a batch of inputs to a provider kind, or null when every input fits its window. */
export function embeddingWindowWarning(kind: ProviderKind, texts: readonly string[]): EmbeddingWindowWarning | null {
  const threshold = EMBEDDING_INPUT_WINDOWS[kind];
  if (threshold === undefined) return null;
  let over = 0;
  let longest = 0;
  for (const t of texts) {
    if (t.length > threshold) over++;
    longest = Math.max(longest, t.length);
  }
  if (over === 0) return null;
  return {
    threshold,
    over,
    longest,
    message:
      `${over} embedding input(s) exceed the ${threshold}-character window of the ${kind} provider ` +
      `(longest ${longest} characters); the provider may embed only the start of each, the full text is kept.`,
  };
}
