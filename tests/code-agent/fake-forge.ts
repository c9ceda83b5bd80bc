import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Git host API on loopback (GitHub's pull request routes under `/api/v3`, any repository):
 * `POST /api/v3/repos/<owner>/<repo>/pulls` opens a pull request and `GET ...?head=<owner>:<branch>`
 * finds it by head branch. With `holdOpens` set, a pull request is opened but the answer never comes (the
 * caller dies waiting, the effect done). Counts every open, so a doubled pull request shows.
 */
export interface FakeForge {
  url: string;
  /** The API base to configure (`agent_cli.forge_api_url`). */
  apiUrl: string;
  pulls: Array<{ number: number; html_url: string; head: { ref: string } }>;
  /** The query string of every search. */
  searches: string[];
  /** Every `Authorization` header an open carried. */
  openAuth: Array<string | undefined>;
  holdOpens: boolean;
  close(): Promise<void>;
}

export async function startFakeForge(): Promise<FakeForge> {
  const held: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://forge');
      res.setHeader('content-type', 'application/json');
      const repo = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(url.pathname);
      if (!repo) return void res.writeHead(404).end('{}');
      if (req.method === 'POST') {
        const body = JSON.parse(raw) as { head: string };
        const n = forge.pulls.length + 1;
        forge.pulls.push({
          number: n,
          html_url: `https://forge.test/${repo[1]}/${repo[2]}/pull/${n}`,
          head: { ref: body.head },
        });
        forge.openAuth.push(req.headers.authorization);
        if (forge.holdOpens) return void held.push(() => res.destroy());
        return void res.writeHead(201).end(JSON.stringify(forge.pulls.at(-1)));
      }
      forge.searches.push(url.search);
      const head = url.searchParams.get('head')?.replace(`${repo[1]}:`, '');
      res.end(JSON.stringify(forge.pulls.filter((p) => p.head.ref === head)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const forge: FakeForge = {
    url,
    apiUrl: `${url}/api/v3`,
    pulls: [],
    searches: [],
    openAuth: [],
    holdOpens: false,
    close: async () => {
      held.splice(0).forEach((release) => release());
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return forge;
}
