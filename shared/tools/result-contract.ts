/**
 * The one rule for tool results (README, "Response shapes"), whichever path calls the tool
 * (`POST /api/tool_call` answers `{success: true, data: {tool, result}}`, agent turns hand the result
 * to the model):
 *
 * - a result is a JSON object whose keys are snake_case, like the REST bodies, except where the spec
 *   fixes other names: the document-index tool's `Success`, `Error`, `Message`, `TotalCount`,
 *   `Documents`, `Warnings`, `IndexDetails` (and `Indices` beside them);
 * - a refusal is never a result: it is thrown as a PlatformError (a 4xx/5xx envelope over HTTP, a tool
 *   error over MCP), so no result carries `success: false`, except the two failures the spec states
 *   in the result itself: the document-index tool's `Success` false with `Error` (DELETE_INDEX with
 *   surviving collections; a RECHUNK whose workflow failed) and the Action Review execute answer
 *   (`success`, `claimed`, `final_status`, `refusal_reason`, …; spec, Action Review endpoints), which
 *   `action_review` EXECUTE_PROPOSAL and `crm_connector` execute_merge answer.
 */

const SNAKE = /^[a-z][a-z0-9_]*$/;

/** Keys the spec spells in capitals, per tool. */
const SPEC_CASED_KEYS: Record<string, ReadonlySet<string>> = {
  _document_index: new Set([
    'Success',
    'Error',
    'Message',
    'TotalCount',
    'Documents',
    'Warnings',
    'IndexDetails',
    'Indices',
  ]),
};

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The spec's in-result failures: where a `success`/`Success` false is the stated shape, not a hidden refusal. */
function statedFailure(tool: string, node: Json): boolean {
  if (tool === '_document_index') return node.Success === false && typeof node.Error === 'string';
  if (tool === 'action_review' || tool === 'crm_connector')
    return node.success === false && 'claimed' in node && 'final_status' in node;
  return false;
}

/** Every place under `node` where a `success` (or `Success`) false sits, as dotted paths. */
export function successFalsePaths(node: unknown, at = ''): { path: string; holder: Json }[] {
  if (Array.isArray(node)) return node.flatMap((v, i) => successFalsePaths(v, `${at}[${i}]`));
  if (!isObject(node)) return [];
  const here = (['success', 'Success'] as const)
    .filter((k) => node[k] === false)
    .map((k) => ({ path: at ? `${at}.${k}` : k, holder: node }));
  return [...here, ...Object.entries(node).flatMap(([k, v]) => successFalsePaths(v, at ? `${at}.${k}` : k))];
}

/** What in a tool's result breaks the rule (empty when it follows it). */
export function toolResultViolations(tool: string, result: unknown): string[] {
  if (!isObject(result)) return [`${tool}: the result is not a JSON object`];
  const cased = SPEC_CASED_KEYS[tool];
  const keys = Object.keys(result)
    .filter((k) => !SNAKE.test(k) && !cased?.has(k))
    .map((k) => `${tool}: key "${k}" is not snake_case`);
  const failures = successFalsePaths(result)
    .filter((f) => !statedFailure(tool, f.holder))
    .map((f) => `${tool}: ${f.path} is false in a result (a refusal is an error, not a result)`);
  return [...keys, ...failures];
}
