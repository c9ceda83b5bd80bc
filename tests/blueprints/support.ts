import { mkdirSync } from 'node:fs';
import { expect } from 'vitest';
import yauzl from 'yauzl';
import { query } from '../helpers/db.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import { startOidcStack } from '../helpers/oidc-stack.js';
import { http, type HttpResult, type Stack } from '../helpers/stack.js';

export interface BlueprintStackOptions {
  /** Users by `sub` with their roles; each gets a token (name: the sub in capitals). Without users the stack runs with `AUTH_PROVIDER=none`. */
  users?: Record<string, string[]>;
  /** Custom roles inserted for tenant `default` (name and permissions). */
  customRoles?: Array<{ name: string; permissions?: string[] }>;
  /** Run a worker (default false). */
  worker?: boolean;
  /** Extra environment, added to or overriding the defaults. */
  env?: Record<string, string>;
  /** Prefix of the temporary data folder. */
  dataDirPrefix?: string;
}

export interface BlueprintStack {
  stack: Stack;
  idp: FakeIdp;
  /** `PLATFORM_BLUEPRINTS_DIR`: working copies live under `<root>/<tenant>/<blueprint_id>/`. */
  root: string;
  /** The base URL the helpers call (the stack's; a test may point it at another API over the same deployment). */
  url: string;
  /** The user's token (undefined for an unknown user: the call goes out unauthenticated). */
  token(who?: string): string | undefined;
  /** A JSON call as `who` (default `root`). */
  api(method: string, p: string, who?: string, body?: unknown): Promise<HttpResult<Record<string, any>>>;
  /** A multipart ZIP upload (field `file`, then `fields`) as `who`. */
  upload(
    p: string,
    who: string | undefined,
    archive: Buffer,
    fields?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, any> }>;
  /** A raw GET as `who`. */
  download(p: string, who?: string): Promise<{ status: number; type: string | null; bytes: Buffer }>;
  /** Creates a blueprint with one `gather` phase (as `who`, default `root`; `fields` add to or replace the body); expects 201, answers its id. */
  createBlueprint(name: string, opts?: { who?: string } & Record<string, unknown>): Promise<string>;
  /** Inserts a mission (a `projects` row) of blueprint `name`/`blueprintId` in `status`; answers its id. */
  insertMission(name: string, blueprintId: string, status: string): Promise<string>;
  /** The blueprint's row (name, hidden), undefined once it is gone. */
  blueprintRow(id: string): Promise<{ name: string; hidden: boolean } | undefined>;
  close(): Promise<void>;
}

let missionSeq = 0;

/** A stack for the blueprint suites: OIDC users and custom roles, blueprints in a temporary folder, no worker by default. */
export async function startBlueprintStack(options: BlueprintStackOptions = {}): Promise<BlueprintStack> {
  const oidc = await startOidcStack({
    worker: options.worker ?? false,
    dataDirPrefix: options.dataDirPrefix ?? 'bp-test-',
    env: { ...(options.users ? {} : { AUTH_PROVIDER: 'none' }), ...options.env },
  });
  const tokens: Record<string, string> = {};
  try {
    for (const [sub, roles] of Object.entries(options.users ?? {}))
      tokens[sub] = await oidc.idp.sign({ sub, name: sub.toUpperCase(), roles });
    for (const role of options.customRoles ?? [])
      await query(
        oidc.stack.db.url,
        `insert into custom_roles (tenant, name, permissions, created_at, updated_at) values ('default', $1, $2, now(), now())`,
        [role.name, JSON.stringify(role.permissions ?? [])],
      );
  } catch (err) {
    await oidc.close();
    throw err;
  }
  const root = oidc.stack.config.blueprints.dir;
  mkdirSync(root, { recursive: true });
  const auth = (who?: string): Record<string, string> => {
    const token = bp.token(who);
    return token ? { authorization: `Bearer ${token}` } : {};
  };
  const bp: BlueprintStack = {
    stack: oidc.stack,
    idp: oidc.idp,
    root,
    url: oidc.stack.url,
    token: (who = 'root') => tokens[who],
    api: (method, p, who, body) =>
      http(bp.url, method, p, { token: bp.token(who), ...(body !== undefined ? { body } : {}) }),
    async upload(p, who, archive, fields = {}) {
      const form = new FormData();
      form.append('file', new Blob([archive], { type: 'application/zip' }), 'bp.zip');
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      const res = await fetch(bp.url + p, { method: 'POST', headers: auth(who), body: form });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async download(p, who) {
      const res = await fetch(bp.url + p, { headers: auth(who) });
      return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
    },
    async createBlueprint(name, { who, ...fields } = {}) {
      const c = await bp.api('POST', '/api/blueprints/', who, {
        blueprint_name: name,
        short_description: `Blueprint ${name}`,
        phases: [{ id: 'gather', name: 'Gather', goal: 'Collect', prompts: [{ text: 'Query it' }] }],
        ...fields,
      });
      expect(c.status).toBe(201);
      return c.body.data.blueprint_id as string;
    },
    async insertMission(name, blueprintId, status) {
      const id = `prj_${(++missionSeq).toString(16).padStart(32, '0')}`;
      await query(
        bp.stack.db.url,
        `insert into projects (id, tenant, name, blueprint_name, blueprint_id, blueprint_commit, status, requested_by, phases_total)
         values ($1, 'default', $2, $3, $4, 'c0ffee', $5, 'root', 1)`,
        [id, `${name} mission`, name, blueprintId, status],
      );
      return id;
    },
    blueprintRow: async (id) =>
      (await query(bp.stack.db.url, 'select name, hidden from blueprints where blueprint_id = $1', [id]))[0] as
        { name: string; hidden: boolean } | undefined,
    close: () => oidc.close(),
  };
  return bp;
}

/** The members of a ZIP archive, in archive order. */
export function readZipMembers(buf: Buffer): Promise<Array<[string, Buffer]>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zf) => {
      if (err || !zf) return reject(err);
      const out: Array<[string, Buffer]> = [];
      zf.on('entry', (e: yauzl.Entry) => {
        zf.openReadStream(e, (e2, s) => {
          if (e2 || !s) return reject(e2);
          const chunks: Buffer[] = [];
          s.on('data', (c: Buffer) => chunks.push(c));
          s.on('end', () => {
            out.push([e.fileName, Buffer.concat(chunks)]);
            zf.readEntry();
          });
        });
      });
      zf.on('end', () => resolve(out));
      zf.readEntry();
    });
  });
}

/** The members of a ZIP archive by name. */
export const readZip = async (buf: Buffer) => new Map(await readZipMembers(buf));
