import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { beside, startOidcStack, type OidcStack, type OidcStackOptions, type People } from '../helpers/oidc-stack.js';

/**
 * The configuration suites' stack: OIDC sign-in with an administrator (`admin`: root) and a member
 * (`member`: ann) unless `tokens` says otherwise, and no worker unless asked for.
 */
export function startConfigStack<K extends string = People>(options: OidcStackOptions<K> = {}): Promise<OidcStack<K>> {
  return startOidcStack<K>({ worker: false, dataDirPrefix: 'config-test-', ...options });
}

export interface LlmConfigStack extends OidcStack {
  /** The fake model the provider routes are pointed at. */
  llm: FakeLlm;
}

/** A configuration stack beside a fake model; `env` may use the model's addresses. */
export async function startLlmConfigStack(
  env: (llm: FakeLlm) => Record<string, string> = () => ({}),
): Promise<LlmConfigStack> {
  const llm = await startFakeLlm();
  return { ...(await beside(llm, () => startConfigStack({ env: env(llm) }))), llm };
}
