import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The SDK's own client over Streamable HTTP against a started stack. */
export async function connectMcp(
  url: string,
  path = '/mcp/v2/',
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: 'platform-tests', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url + path), { requestInit: { headers } }));
  return client;
}

export async function callPlatform(
  client: Client,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; data: any }> {
  const result = (await client.callTool({ name: 'platform', arguments: args })) as CallToolResult;
  const text = result.content.find((c) => c.type === 'text');
  let data: unknown = text && 'text' in text ? text.text : undefined;
  try {
    data = JSON.parse(data as string);
  } catch {
    // Not JSON (an SDK-level message): keep the text.
  }
  return { isError: result.isError === true, data };
}

/** A raw JSON-RPC POST, for status codes and headers the SDK client hides. */
export function rawMcpPost(
  url: string,
  path: string,
  headers: Record<string, string> = {},
  body: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list' },
) {
  return fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}
