/**
 * Tracker polling rules with an injected clock (spec, Limits: tracker polling): the search window
 * (first poll, steady state 600 s before the last successful poll, explicit lookback), the poll-now
 * skip rule (elapsed ≥ interval − 2 s) and the provider status mapping.
 */
import { describe, expect, it } from 'vitest';
import { jqlDate, mapProviderStatus, pollNowDecision, searchWindowStart } from '../../shared/tracker/policy.js';

const at = (iso: string) => new Date(iso);

describe('search window', () => {
  it('first poll looks back poll_lookback_minutes', () => {
    const w = searchWindowStart({ now: at('2026-11-23T12:00:00Z'), lastSuccessfulPollAt: null, lookbackMinutes: 60 });
    expect(w.toISOString()).toBe('2026-11-23T11:00:00.000Z');
  });

  it('steady state starts 600 s before the last successful poll, whatever the lookback', () => {
    const w = searchWindowStart({
      now: at('2026-11-23T12:00:00Z'),
      lastSuccessfulPollAt: at('2026-11-23T11:55:00Z'),
      lookbackMinutes: 60,
    });
    expect(w.toISOString()).toBe('2026-11-23T11:45:00.000Z');
    // A long outage: still from the last success, so nothing updated meanwhile is missed.
    const late = searchWindowStart({
      now: at('2026-11-24T12:00:00Z'),
      lastSuccessfulPollAt: at('2026-11-23T11:55:00Z'),
      lookbackMinutes: 5,
    });
    expect(late.toISOString()).toBe('2026-11-23T11:45:00.000Z');
  });

  it('an explicit lookback (poll-now lookback_minutes) wins', () => {
    const w = searchWindowStart({
      now: at('2026-11-23T12:00:00Z'),
      lastSuccessfulPollAt: at('2026-11-23T11:55:00Z'),
      lookbackMinutes: 60,
      overrideLookbackMinutes: 1440,
    });
    expect(w.toISOString()).toBe('2026-11-22T12:00:00.000Z');
  });

  it('formats the JQL date in UTC to the minute', () => {
    expect(jqlDate(at('2026-01-02T03:04:59.999Z'))).toBe('2026-01-02 03:04');
  });
});

describe('poll-now skip rule', () => {
  const last = at('2026-11-23T12:00:00Z');
  const decide = (elapsedSeconds: number, intervalSeconds = 300) =>
    pollNowDecision({
      now: new Date(last.getTime() + elapsedSeconds * 1000),
      lastPollStartedAt: last,
      intervalSeconds,
    });

  it('runs when no poll has started yet', () => {
    expect(pollNowDecision({ now: last, lastPollStartedAt: null, intervalSeconds: 300 })).toEqual({ run: true });
  });

  it('runs at exactly interval − 2 s and later', () => {
    expect(decide(298)).toEqual({ run: true });
    expect(decide(300)).toEqual({ run: true });
    expect(decide(5000)).toEqual({ run: true });
  });

  it('skips before interval − 2 s, with the seconds until the next scheduled poll', () => {
    expect(decide(297.9)).toEqual({ run: false, next_poll_seconds: 3 });
    expect(decide(0)).toEqual({ run: false, next_poll_seconds: 300 });
    expect(decide(100, 60)).toEqual({ run: true });
    expect(decide(10, 60)).toEqual({ run: false, next_poll_seconds: 50 });
  });
});

describe('provider status mapping', () => {
  const map = { done: ['Done', 'Closed'], needs_info: ['Waiting for customer'], working: ['In Progress'] };
  it('maps configured statuses case-insensitively and leaves others unmapped', () => {
    expect(mapProviderStatus('done', map)).toBe('done');
    expect(mapProviderStatus(' Waiting for Customer ', map)).toBe('needs_info');
    expect(mapProviderStatus('In Progress', map)).toBe('working');
    expect(mapProviderStatus('To Do', map)).toBeNull();
    expect(mapProviderStatus(null, map)).toBeNull();
  });
});
