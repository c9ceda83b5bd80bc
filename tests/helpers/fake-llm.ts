import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bedrockRefusal, verifySigV4, type FakeAwsIdentity } from './fake-aws.js';

export interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; parameters: unknown } }>;
}

export type FakeReply =
  | { content: string }
  /**
   * The answer in pieces: a streamed request (`stream: true`, OpenAI wire) gets one SSE chunk per piece,
   * each sent once `before(i)` settles (a test holds the stream between pieces); others get the joined text.
   */
  | { chunks: string[]; before?: (index: number) => Promise<void> }
  | { toolCalls: Array<{ name: string; arguments: unknown }> }
  | { status: number; body: string }
  | { hang: true };

export interface FakeLlm {
  baseUrl: string;
  /** `http://127.0.0.1:<port>` (Azure-type, Anthropic and Bedrock-type paths hang off it). */
  origin: string;
  requests: ChatRequest[];
  /** Every request's method, path (with query) and credential header, in order. */
  calls: Array<{ method: string; path: string; credential: string | undefined }>;
  /** When set, a request without this credential (Bearer, `api-key` or `x-api-key`) answers 401. */
  apiKey: string | undefined;
  /** When set, Bedrock-type paths (`/model/...`) need a valid SigV4 signature (service `bedrock`) of this identity. */
  aws: { identity: FakeAwsIdentity; region: string } | undefined;
  /** When set, `POST /oidc/v1/token` issues `token` for these client credentials (Basic auth, client_credentials). */
  oauth: { clientId: string; clientSecret: string; token: string; issued: number } | undefined;
  /** What `GET /v1/models` and the Azure-type deployment list answer. */
  models: string[];
  /** GET paths answered with a redirect to the given location (proxy discovery tests). */
  redirects: Record<string, { status: number; location: string }>;
  /** Embedding calls hang (never answer) while set. */
  embeddingsHang: boolean;
  /** When set, embedding calls hang once this many have been answered. */
  embeddingsHangAfter: number | undefined;
  /** When set, embedding calls whose inputs it accepts hang (never answer). */
  embeddingsHangOn: ((texts: string[]) => boolean) | undefined;
  /** The inputs of every answered embedding call, in order. */
  embeddingInputs: string[][];
  /** Decides each answer from the request (the conversation so far). */
  respond: (req: ChatRequest) => FakeReply;
  /** Releases every request held by `{ hang: true }` with this reply. */
  release(reply: FakeReply): void;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => resolve(data));
  });

/** A local OpenAI-compatible chat endpoint: scripted answers, tool calls, errors, or a hang. */
export async function startFakeLlm(respond: FakeLlm['respond'] = () => ({ content: 'ok' })): Promise<FakeLlm> {
  const held: Array<(reply: FakeReply) => void> = [];
  let callNo = 0;
  const fake: FakeLlm = {
    baseUrl: '',
    origin: '',
    requests: [],
    calls: [],
    apiKey: undefined,
    aws: undefined,
    oauth: undefined,
    models: ['fake-model', 'fake-embed'],
    redirects: {},
    embeddingsHang: false,
    embeddingsHangAfter: undefined,
    embeddingsHangOn: undefined,
    embeddingInputs: [],
    respond,
    release(reply) {
      for (const h of held.splice(0)) h(reply);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer(
    (req, res) =>
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://fake');
        const credential =
          req.headers.authorization?.replace(/^Bearer /, '') ??
          (req.headers['api-key'] as string | undefined) ??
          (req.headers['x-api-key'] as string | undefined);
        fake.calls.push({ method: req.method ?? '', path: url.pathname + url.search, credential });
        const json = (status: number, value: unknown) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
        const redirect = req.method === 'GET' ? fake.redirects[url.pathname] : undefined;
        if (redirect) {
          res.writeHead(redirect.status, { location: redirect.location }).end();
          return;
        }
        const raw = req.method === 'POST' ? await readBody(req) : '';
        if (fake.oauth && req.method === 'POST' && url.pathname === '/oidc/v1/token') {
          const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
            .toString()
            .split(':')
            .map((p) => decodeURIComponent(p));
          const form = new URLSearchParams(raw);
          if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
          if (id !== fake.oauth.clientId || secret !== fake.oauth.clientSecret)
            return json(401, { error: 'invalid_client', error_description: 'Client authentication failed' });
          fake.oauth.issued++;
          return json(200, {
            access_token: fake.oauth.token,
            token_type: 'Bearer',
            expires_in: 3600,
            scope: form.get('scope'),
          });
        }
        if (fake.aws && url.pathname.startsWith('/model/')) {
          const refusal = verifySigV4(req, raw, fake.aws.identity, fake.aws.region, 'bedrock');
          if (refusal) {
            const r = bedrockRefusal(refusal);
            res.writeHead(r.status, r.headers).end(r.body);
            return;
          }
        } else if (fake.apiKey !== undefined && credential !== fake.apiKey) {
          json(401, { error: { message: `bad key ${credential}`, type: 'invalid_api_key' } });
          return;
        }
        if (req.method === 'GET' && (url.pathname.endsWith('/models') || url.pathname === '/openai/deployments')) {
          json(200, { object: 'list', data: fake.models.map((id) => ({ id, object: 'model' })) });
          return;
        }
        if (
          req.method === 'POST' &&
          (url.pathname === '/v1/embeddings' || /^\/openai\/deployments\/[^/]+\/embeddings$/.test(url.pathname))
        ) {
          if (fake.embeddingsHang) return;
          if (fake.embeddingsHangAfter !== undefined && fake.embeddingInputs.length >= fake.embeddingsHangAfter) return;
          const input = (JSON.parse(raw) as { input: string[] | string }).input;
          const texts = Array.isArray(input) ? input : [input];
          if (fake.embeddingsHangOn?.(texts)) return;
          fake.embeddingInputs.push(texts);
          json(200, {
            data: texts.map((_, index) => ({ index, embedding: [0.1, 0.2, 0.3] })),
            usage: { prompt_tokens: texts.length },
          });
          return;
        }
        const azure = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(url.pathname);
        const bedrock = /^\/model\/([^/]+)\/(invoke|converse)$/.exec(url.pathname);
        const wire =
          url.pathname === '/v1/chat/completions' || azure
            ? 'openai'
            : url.pathname === '/v1/responses'
              ? 'responses'
              : url.pathname === '/v1/messages' || bedrock?.[2] === 'invoke'
                ? 'anthropic'
                : bedrock?.[2] === 'converse'
                  ? 'converse'
                  : undefined;
        if (req.method !== 'POST' || !wire) {
          res.writeHead(404).end();
          return;
        }
        const parsed = JSON.parse(raw) as Record<string, unknown>;
        const model = azure?.[1] ?? (bedrock ? decodeURIComponent(bedrock[1]!) : (parsed.model as string));
        const body = { ...toChatRequest(wire, parsed), model };
        fake.requests.push(body);
        const send = (reply: FakeReply) => {
          if ('hang' in reply) {
            held.push(send);
            return;
          }
          if ('status' in reply) {
            res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
            return;
          }
          const calls =
            'toolCalls' in reply
              ? reply.toolCalls.map((c, i) => ({ id: `call_${++callNo}_${i}`, name: c.name, input: c.arguments }))
              : [];
          const text = 'content' in reply ? reply.content : 'chunks' in reply ? reply.chunks.join('') : null;
          if (wire === 'openai' && parsed.stream === true) {
            void streamChat(
              res,
              body.model,
              'chunks' in reply ? reply : { chunks: text === null ? [] : [text] },
              calls,
            );
            return;
          }
          if (wire === 'anthropic') {
            json(200, {
              id: 'msg_fake',
              type: 'message',
              role: 'assistant',
              model: body.model,
              content: [
                ...(text !== null ? [{ type: 'text', text }] : []),
                ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
              ],
              stop_reason: calls.length ? 'tool_use' : 'end_turn',
              usage: { input_tokens: 11, output_tokens: 7 },
            });
            return;
          }
          if (wire === 'responses') {
            json(200, {
              id: 'resp_fake',
              object: 'response',
              status: 'completed',
              model: body.model,
              output: [
                ...(text !== null
                  ? [
                      {
                        type: 'message',
                        id: 'msg_fake',
                        role: 'assistant',
                        status: 'completed',
                        content: [{ type: 'output_text', text, annotations: [] }],
                      },
                    ]
                  : []),
                ...calls.map((c) => ({
                  type: 'function_call',
                  id: `fc_${c.id}`,
                  call_id: c.id,
                  name: c.name,
                  arguments: JSON.stringify(c.input),
                  status: 'completed',
                })),
              ],
              usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18 },
            });
            return;
          }
          if (wire === 'converse') {
            json(200, {
              output: {
                message: {
                  role: 'assistant',
                  content: [
                    ...(text !== null ? [{ text }] : []),
                    ...calls.map((c) => ({ toolUse: { toolUseId: c.id, name: c.name, input: c.input } })),
                  ],
                },
              },
              stopReason: calls.length ? 'tool_use' : 'end_turn',
              usage: { inputTokens: 11, outputTokens: 7 },
            });
            return;
          }
          const message =
            text !== null
              ? { role: 'assistant', content: text }
              : {
                  role: 'assistant',
                  content: null,
                  tool_calls: calls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.input) },
                  })),
                };
          json(200, {
            id: 'chatcmpl-fake',
            model: body.model,
            choices: [{ index: 0, message, finish_reason: 'stop' }],
            usage: { prompt_tokens: 11, completion_tokens: 7 },
          });
        };
        send(fake.respond(body));
      })(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  fake.baseUrl = `${fake.origin}/v1`;
  return fake;
}

/** A streamed chat completion: `chat.completion.chunk` SSE lines (text pieces, tool calls, usage), then `[DONE]`. */
async function streamChat(
  res: ServerResponse,
  model: string,
  reply: { chunks: string[]; before?: (index: number) => Promise<void> },
  calls: Array<{ id: string; name: string; input: unknown }>,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (chunk: object) =>
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', model, ...chunk })}\n\n`);
  send({ choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] });
  for (const [i, piece] of reply.chunks.entries()) {
    await reply.before?.(i);
    send({ choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
  }
  calls.forEach((c, i) =>
    send({
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: i, id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } },
            ],
          },
          finish_reason: null,
        },
      ],
    }),
  );
  send({ choices: [{ index: 0, delta: {}, finish_reason: calls.length ? 'tool_calls' : 'stop' }] });
  send({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 7 } });
  res.end('data: [DONE]\n\n');
}

/** Any wire format's request as the OpenAI-shaped `ChatRequest` the scripted answers read. */
function toChatRequest(
  wire: 'openai' | 'responses' | 'anthropic' | 'converse',
  body: Record<string, unknown>,
): ChatRequest {
  if (wire === 'openai') return body as unknown as ChatRequest;
  if (wire === 'responses') return responsesToChatRequest(body);
  const messages: ChatRequest['messages'] = [];
  const system = wire === 'anthropic' ? body.system : (body.system as Array<{ text: string }> | undefined)?.[0]?.text;
  if (typeof system === 'string' && system) messages.push({ role: 'system', content: system });
  for (const m of (body.messages ?? []) as Array<{ role: string; content: Array<Record<string, any>> }>) {
    for (const b of m.content) {
      if (b.type === 'text' || typeof b.text === 'string') messages.push({ role: m.role, content: b.text as string });
      else if (b.type === 'tool_result' || b.toolResult)
        messages.push({ role: 'tool', content: String(b.content ?? b.toolResult?.content?.[0]?.text ?? '') });
      else if (b.type === 'tool_use' || b.toolUse) messages.push({ role: 'assistant', content: null, tool_calls: [b] });
    }
  }
  const tools = (body.tools ?? (body.toolConfig as { tools?: unknown[] } | undefined)?.tools ?? []) as Array<
    Record<string, any>
  >;
  return {
    model: '',
    messages,
    tools: tools.map((t) => ({
      type: 'function',
      function: { name: (t.name ?? t.toolSpec?.name) as string, parameters: t.input_schema ?? t.toolSpec?.inputSchema },
    })),
  };
}

/** A Responses request (`instructions`, input items, flat function tools) as the OpenAI-shaped `ChatRequest`. */
function responsesToChatRequest(body: Record<string, unknown>): ChatRequest {
  const messages: ChatRequest['messages'] = [];
  if (typeof body.instructions === 'string') messages.push({ role: 'system', content: body.instructions });
  for (const item of (body.input ?? []) as Array<Record<string, any>>) {
    if (item.type === 'function_call')
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } }],
      });
    else if (item.type === 'function_call_output')
      messages.push({ role: 'tool', content: String(item.output), tool_call_id: String(item.call_id) });
    else messages.push({ role: String(item.role), content: String(item.content) });
  }
  const tools = (body.tools ?? []) as Array<Record<string, any>>;
  return {
    model: '',
    messages,
    tools: tools.map((t) => ({ type: 'function', function: { name: t.name as string, parameters: t.parameters } })),
  };
}
