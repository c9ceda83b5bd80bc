import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PEOPLE, type OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startSkillsStack } from './support.js';

/** `DELETE /api/skills/{skill_name}`: a skill leaves the runtime registry (the skills folder). */
let s: OidcStack<'admin' | 'developer' | 'reviewer'>;
let stack: Stack;
let skillsDir: string;
let admin: string;
let developer: string;
let reviewer: string;

beforeAll(async () => {
  skillsDir = mkdtempSync(path.join(tmpdir(), 'skills-'));
  for (const name of ['charts', 'sql-helper']) {
    mkdirSync(path.join(skillsDir, name));
    writeFileSync(path.join(skillsDir, name, 'SKILL.md'), `# ${name}\n`);
  }
  writeFileSync(path.join(skillsDir, 'loose-file'), 'not a skill');
  s = await startSkillsStack(skillsDir, {
    tokens: {
      admin: PEOPLE.admin,
      developer: { sub: 'dev', roles: ['developer'] },
      reviewer: { sub: 'rev', roles: ['reviewer'] },
    },
  });
  stack = s.stack;
  ({ admin, developer, reviewer } = s.tokens);
}, 60_000);
afterAll(async () => {
  await s?.close();
  if (skillsDir) rmSync(skillsDir, { recursive: true, force: true });
});

describe('runtime skill registry', () => {
  it('refuses callers without manage_skills and unknown skills, changing nothing', async () => {
    expect((await http(stack.url, 'DELETE', '/api/skills/charts')).status).toBe(401);
    const refused = await http(stack.url, 'DELETE', '/api/skills/charts', { token: reviewer });
    expect(refused.status).toBe(403);
    expect(refused.body.error_type).toBe('forbidden');
    const unknown = await http(stack.url, 'DELETE', '/api/skills/nope', { token: developer });
    expect(unknown.status).toBe(404);
    // A file is not a skill; ".." is not a skill name.
    expect((await http(stack.url, 'DELETE', '/api/skills/loose-file', { token: developer })).status).toBe(404);
    expect((await http(stack.url, 'DELETE', '/api/skills/..', { token: developer })).status).not.toBe(200);
    expect(readdirSync(skillsDir).sort()).toEqual(['charts', 'loose-file', 'sql-helper']);
  });

  it('removes a skill: moved aside, no longer served, a second delete is 404', async () => {
    const res = await http(stack.url, 'DELETE', '/api/skills/charts', { token: developer });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ skill_name: 'charts', removed: true });
    expect(res.body.data.moved_to).toMatch(/^\.removed\/charts-\d+$/);
    expect(existsSync(path.join(skillsDir, 'charts'))).toBe(false);
    expect(readFileSync(path.join(skillsDir, res.body.data.moved_to, 'SKILL.md'), 'utf8')).toBe('# charts\n');
    expect(existsSync(path.join(skillsDir, 'sql-helper', 'SKILL.md'))).toBe(true);
    expect((await http(stack.url, 'DELETE', '/api/skills/charts', { token: admin })).status).toBe(404);
  });
});
