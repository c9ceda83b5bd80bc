import { describe, expect, it } from 'vitest';
import { resolveDefaultAgent } from '../../shared/agents/default-agent.js';

const eve = { id: 'eve', name: 'Eve' };
const adam = { id: 'adam', name: 'Adam' };
const zed = { id: 'a2', name: 'Zed' };
const bob = { id: 'a3', name: 'Bob' };

describe('resolveDefaultAgent', () => {
  it('uses the gateway setting over the env default when the caller may use it', () => {
    expect(resolveDefaultAgent([eve, zed], { settingAgentId: 'a2', envAgentId: 'eve' })).toEqual({
      ok: true,
      agent: zed,
      reason: 'configured',
    });
  });
  it('falls back to the env default when the setting is cleared', () => {
    expect(resolveDefaultAgent([eve, zed], { settingAgentId: null, envAgentId: 'a2' })).toMatchObject({
      agent: zed,
      reason: 'configured',
    });
  });
  it('refuses with require_selection (the default policy) when the configured agent is not accessible', () => {
    expect(resolveDefaultAgent([eve], { settingAgentId: 'a2' })).toMatchObject({
      ok: false,
      code: 'default_agent_unavailable',
    });
    expect(resolveDefaultAgent([eve], { envAgentId: 'a2', envPolicy: 'require_selection' })).toMatchObject({
      ok: false,
    });
  });
  it('uses the per-caller chain with first_available; the setting policy beats the env policy', () => {
    expect(resolveDefaultAgent([eve, zed], { settingAgentId: 'gone', settingPolicy: 'first_available' })).toMatchObject(
      { agent: eve, reason: 'eve' },
    );
    expect(
      resolveDefaultAgent([eve], {
        settingAgentId: 'gone',
        settingPolicy: 'require_selection',
        envPolicy: 'first_available',
      }),
    ).toMatchObject({ ok: false });
    expect(resolveDefaultAgent([eve], { settingAgentId: 'gone', envPolicy: 'first_available' })).toMatchObject({
      agent: eve,
    });
  });
  it('picks Eve, else Adam, else the first accessible agent alphabetically', () => {
    expect(resolveDefaultAgent([zed, adam, eve], {})).toMatchObject({ agent: eve, reason: 'eve' });
    expect(resolveDefaultAgent([zed, adam, bob], {})).toMatchObject({ agent: adam, reason: 'adam' });
    expect(resolveDefaultAgent([zed, bob], {})).toMatchObject({ agent: bob, reason: 'first_alphabetical' });
  });
  it('refuses a caller with no accessible agent', () => {
    expect(resolveDefaultAgent([], {})).toMatchObject({ ok: false, code: 'no_accessible_agent' });
  });
});
