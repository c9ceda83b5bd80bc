import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A real Git smart-HTTP server on loopback: `git http-backend` (CGI) behind Node, basic auth checked. */
export interface GitServer {
  url: string;
  root: string;
  /** Creates a repository `name` with a working copy; answers helpers that make real commits and tags. */
  repo(name: string): GitRepo;
  /**
   * Holds every request (or those `which` selects) until the returned function is called (a sync
   * that stays in flight).
   */
  hold(which?: (req: IncomingMessage) => boolean): () => void;
  close(): Promise<void>;
}

export interface GitRepo {
  url: string;
  write(files: Record<string, string>): string;
  /**
   * Commits a file straight into the index (never written to the working copy, so its name may be
   * one no filesystem accepts, e.g. longer than 255 bytes); pushed; answers the commit.
   */
  writeIndexOnly(file: string, text: string): string;
  /** Removes files in one commit (pushed); answers the commit. */
  remove(files: string[]): string;
  tag(name: string, opts?: { force?: boolean }): void;
  head(): string;
}

export async function startGitServer(auth: { username: string; password: string }): Promise<GitServer> {
  const root = mkdtempSync(path.join(tmpdir(), 'git-server-'));
  const expected = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  let gate: Promise<void> | null = null;
  let gated: ((req: IncomingMessage) => boolean) | null = null;
  const server: Server = createServer((req, res) => {
    if (gate && (!gated || gated(req))) void gate.then(() => serve(req, res));
    else serve(req, res);
  });
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end('unauthorized');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: auth.username,
        REMOTE_ADDR: '127.0.0.1',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
    cgi.on('close', () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf('\r\n\r\n');
      const head = out.subarray(0, split).toString('utf8').split('\r\n');
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else headers[k] = v;
      }
      res.writeHead(status, headers).end(out.subarray(split + 4));
    });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', args, {
      cwd,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@x',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@x',
      },
    })
      .toString()
      .trim();
  return {
    url: `http://127.0.0.1:${port}`,
    root,
    repo(name) {
      const bare = path.join(root, `${name}.git`);
      const work = path.join(root, `${name}-work`);
      git(root, 'init', '-q', '--bare', '-b', 'main', bare);
      git(root, 'init', '-q', '-b', 'main', work);
      git(work, 'remote', 'add', 'origin', bare);
      return {
        url: `http://127.0.0.1:${port}/${name}.git`,
        write(files) {
          for (const [file, text] of Object.entries(files)) {
            mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
            writeFileSync(path.join(work, file), text);
          }
          git(work, 'add', '-A');
          git(work, 'commit', '-q', '-m', `change ${Object.keys(files).join(',')}`);
          git(work, 'push', '-q', 'origin', 'main');
          return git(work, 'rev-parse', 'HEAD');
        },
        writeIndexOnly(file, text) {
          const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: work, input: text })
            .toString()
            .trim();
          git(work, 'update-index', '--add', '--cacheinfo', `100644,${blob},${file}`);
          git(work, 'update-index', '--skip-worktree', file);
          git(work, 'commit', '-q', '-m', 'index-only file');
          git(work, 'push', '-q', 'origin', 'main');
          return git(work, 'rev-parse', 'HEAD');
        },
        remove(files) {
          git(work, 'rm', '-q', '--', ...files);
          git(work, 'commit', '-q', '-m', `remove ${files.join(',')}`);
          git(work, 'push', '-q', 'origin', 'main');
          return git(work, 'rev-parse', 'HEAD');
        },
        tag(tagName, opts = {}) {
          git(work, 'tag', ...(opts.force ? ['-f'] : []), '-a', tagName, '-m', tagName);
          git(work, 'push', '-q', ...(opts.force ? ['-f'] : []), 'origin', `refs/tags/${tagName}`);
        },
        head: () => git(work, 'rev-parse', 'HEAD'),
      };
    },
    hold(which) {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      gated = which ?? null;
      return () => {
        gate = null;
        gated = null;
        release();
      };
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
