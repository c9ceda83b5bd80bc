/**
 * Logs through pino: today's fields kept, secrets and tokens redacted by path (and bearer tokens in
 * free text), the activity's workflow id, run id and type added inside activities, and the Temporal
 * SDK's own lines routed through the same logger.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createLogger, REDACTED } from '../../shared/log.js';
import { TemporalLogAdapter, workerTelemetryOptions } from '../../shared/observability/temporal-runtime.js';

function collect(level: 'debug' | 'info' = 'info') {
  const lines: string[] = [];
  const log = createLogger({ level, base: { service: 'api' }, sink: (line) => lines.push(line) });
  const parsed = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { log, lines, parsed };
}

describe('platform logger (pino)', () => {
  it('keeps time, level, msg, service and bound fields, one JSON object a line, below-level lines dropped', () => {
    const { log, lines, parsed } = collect();
    log.child({ request_id: 'req_abc12345' }).info('request', { status: 200 });
    log.debug('not written');
    expect(lines).toHaveLength(1);
    const [line] = parsed();
    expect(line).toMatchObject({
      level: 'info',
      msg: 'request',
      service: 'api',
      request_id: 'req_abc12345',
      status: 200,
    });
    expect(new Date(line!.time as string).toISOString()).toBe(line!.time);
  });

  it('redacts a bearer token and a secret by path, and tokens inside message and error text', () => {
    const { log, lines, parsed } = collect();
    log.warn('calling upstream with Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig', {
      headers: { authorization: 'Bearer live-token-123', 'x-platform-internal-token': 'internal-xyz' },
      client_secret: 'cs-very-secret',
      connection: { credentials: { password: 'pw-1', api_key: 'ak-1' } },
      error_message: 'upstream refused token gp_abcdefghijklmnop',
      kept: 'visible',
    });
    const text = lines.join('\n');
    for (const secret of [
      'live-token-123',
      'internal-xyz',
      'cs-very-secret',
      'pw-1',
      'ak-1',
      'eyJhbGciOiJSUzI1NiJ9',
      'gp_abcdefghijklmnop',
    ])
      expect(text).not.toContain(secret);
    const [line] = parsed() as [Record<string, any>];
    expect(line.headers.authorization).toBe(REDACTED);
    expect(line.headers['x-platform-internal-token']).toBe(REDACTED);
    expect(line.client_secret).toBe(REDACTED);
    expect(line.connection.credentials.password).toBe(REDACTED);
    expect(line.msg).toBe(`calling upstream with Bearer ${REDACTED}`);
    expect(line.kept).toBe('visible');
  });

  it('adds workflow id, run id and activity type inside an activity (the SDK activity context)', async () => {
    const { log, parsed } = collect();
    const env = new MockActivityEnvironment({
      activityType: 'executeProposalEffect',
      workflowExecution: { workflowId: 'action-review-p1', runId: 'run-1' },
    });
    await env.run(async () => log.info('effect started'));
    log.info('outside');
    const [inside, outside] = parsed();
    expect(inside).toMatchObject({
      workflow_id: 'action-review-p1',
      run_id: 'run-1',
      activity_type: 'executeProposalEffect',
    });
    expect(outside).not.toHaveProperty('workflow_id');
    expect(outside).not.toHaveProperty('activity_type');
  });

  it('routes the Temporal SDK logger through the platform logger with snake_case metadata', () => {
    const { log, parsed } = collect('debug');
    const sdk = new TemporalLogAdapter(log);
    sdk.log('WARN', 'Activity failed', { workflowId: 'w1', activityType: 'a1', sdkComponent: 'activity' });
    sdk.trace('core detail');
    sdk.error('Worker crashed', { error: new Error('boom') });
    const [warn, trace, error] = parsed();
    expect(warn).toMatchObject({
      level: 'warn',
      msg: 'Activity failed',
      workflow_id: 'w1',
      activity_type: 'a1',
      sdk_component: 'activity',
    });
    expect(trace).toMatchObject({ level: 'debug', msg: 'core detail' });
    expect(error).toMatchObject({ level: 'error', error_name: 'Error', error_message: 'boom' });
  });

  it('forwards core logs and exposes worker metrics only when an address is configured', () => {
    expect(workerTelemetryOptions({}).metrics).toBeUndefined();
    expect(workerTelemetryOptions({}).logging).toHaveProperty('forward');
    expect(workerTelemetryOptions({ metricsBindAddress: '127.0.0.1:9464' }).metrics).toMatchObject({
      prometheus: { bindAddress: '127.0.0.1:9464' },
    });
  });
});
