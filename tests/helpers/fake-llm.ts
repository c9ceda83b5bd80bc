import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; parameters: unknown } }>;
}

export type FakeReply =
  | { content: string }
  | { toolCalls: Array<{ name: string; arguments: unknown }> }
  | { status: number; body: string }
  | { hang: true };

export interface FakeLlm {
  baseUrl: string;
  requests: ChatRequest[];
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
    requests: [],
    respond,
    release(reply) {
      for (const h of held.splice(0)) h(reply);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer(
    (req, res) =>
      void (async () => {
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
          res.writeHead(404).end();
          return;
        }
        const body = JSON.parse(await readBody(req)) as ChatRequest;
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
          const message =
            'content' in reply
              ? { role: 'assistant', content: reply.content }
              : {
                  role: 'assistant',
                  content: null,
                  tool_calls: reply.toolCalls.map((c, i) => ({
                    id: `call_${++callNo}_${i}`,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.arguments) },
                  })),
                };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 'chatcmpl-fake',
              model: body.model,
              choices: [{ index: 0, message, finish_reason: 'stop' }],
              usage: { prompt_tokens: 11, completion_tokens: 7 },
            }),
          );
        };
        send(fake.respond(body));
      })(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
  return fake;
}
