/** What started a model call: the `purpose` label of the model-call metrics (a fixed vocabulary). */
export const LLM_PURPOSES = ['thread_turn', 'ask', 'wizard', 'skill', 'embedding', 'connection_test'] as const;
export type LlmPurpose = (typeof LLM_PURPOSES)[number];
