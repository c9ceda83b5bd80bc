import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { query } from '../helpers/db.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { beside, startOidcStack, type OidcStack } from '../helpers/oidc-stack.js';
import { http, type HttpResult } from '../helpers/stack.js';

/** The people of the mission suites: root (admin), olivia and sam (members). */
export type MissionPeople = 'root' | 'olivia' | 'sam';

export interface MissionStack extends OidcStack<MissionPeople> {
  /** The fake model every phase prompt goes to (it answers "phase work done"). */
  llm: FakeLlm;
  /** `PLATFORM_BLUEPRINTS_DIR`, a fresh temporary folder. */
  root: string;
  /** A JSON call as `who` (one of the people, or anyone else: unauthenticated). */
  api(method: string, p: string, who: string, body?: unknown): Promise<HttpResult<Record<string, any>>>;
}

/** Reads until `ok` accepts the value (a deterministic wait on state, never a fixed time). */
export async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const person = (sub: string, roles: string[]) => ({
  sub,
  name: sub.toUpperCase(),
  email: `${sub}@example.test`,
  roles,
});

/** Inserts API-made agents (`[id, name, instructions]`) of tenant `default`, open to everyone. */
export async function insertAgents(dbUrl: string, agents: Array<[string, string, string]>): Promise<void> {
  const rows = agents.map(
    (_, i) =>
      `($${3 * i + 1}, 'default', $${3 * i + 2}, $${3 * i + 3}, '[]', '{"roles": [], "users": []}', 'api', true, 'root', now(), now())`,
  );
  await query(
    dbUrl,
    `insert into agents (id, tenant, name, instructions, tool_groups, access, source, is_editable, created_by, created_at, updated_at)
     values ${rows.join(', ')}`,
    agents.flat(),
  );
}

/**
 * A mission stack: OIDC sign-in for root, olivia and sam, blueprints in a temporary folder
 * (`dirPrefix` names it), a fake model, and two agents (analyst, writer); `env` adds to the settings.
 */
export async function startMissionStack(dirPrefix: string, env: Record<string, string> = {}): Promise<MissionStack> {
  const root = await mkdtemp(path.join(os.tmpdir(), dirPrefix));
  const llm = await startFakeLlm(() => ({ content: 'phase work done' }));
  const companions = {
    async close() {
      await llm.close();
      await rm(root, { recursive: true, force: true });
    },
  };
  const oidc = await beside(companions, () =>
    startOidcStack<MissionPeople>({
      env: {
        PLATFORM_BLUEPRINTS_DIR: root,
        PLATFORM_LLM_BASE_URL: llm.baseUrl,
        PLATFORM_LLM_MODEL: 'fake-model',
        ...env,
      },
      tokens: { root: person('root', ['admin']), olivia: person('olivia', ['member']), sam: person('sam', ['member']) },
    }),
  );
  const s: MissionStack = {
    ...oidc,
    llm,
    root,
    api: (method, p, who, body) =>
      http(oidc.stack.url, method, p, {
        token: (oidc.tokens as Record<string, string>)[who],
        ...(body !== undefined ? { body } : {}),
      }),
  };
  try {
    await insertAgents(oidc.stack.db.url, [
      ['analyst', 'Analyst', 'You analyse.'],
      ['writer', 'Writer', 'You write.'],
    ]);
  } catch (err) {
    await s.close();
    throw err;
  }
  return s;
}
