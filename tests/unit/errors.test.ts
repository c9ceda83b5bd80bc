import { describe, expect, it } from 'vitest';
import { toPlatformError } from '../../api/middleware/errors.js';
import { isDatabaseUnavailable } from '../../shared/db/errors.js';
import { BadRequestError, ConflictError, PlatformError } from '../../shared/errors.js';
import { isTemporalUnavailable } from '../../shared/temporal/errors.js';

const pgRefused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const grpcUnavailable = Object.assign(new Error('Failed to start Workflow'), {
  name: 'ServiceError',
  cause: Object.assign(
    new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233'),
    { code: 14, details: 'x', metadata: {} },
  ),
});

describe('dependency failure classification', () => {
  it('recognises PostgreSQL outages but not constraint violations', () => {
    expect(isDatabaseUnavailable(pgRefused)).toBe(true);
    expect(
      isDatabaseUnavailable(
        Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      ),
    ).toBe(true);
    expect(isDatabaseUnavailable({ name: 'KnexTimeoutError', message: 'Knex: Timeout acquiring a connection' })).toBe(
      true,
    );
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    // An unreachable external HTTP host (e.g. a CRM) is not a database outage.
    expect(
      isDatabaseUnavailable(
        new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }),
        }),
      ),
    ).toBe(false);
  });

  it('recognises Temporal outages only in gRPC-shaped errors', () => {
    expect(isTemporalUnavailable(grpcUnavailable)).toBe(true);
    expect(isTemporalUnavailable(pgRefused)).toBe(false);
    expect(
      isTemporalUnavailable(
        Object.assign(new Error('not found'), { name: 'ServiceError', cause: { code: 5, details: '' } }),
      ),
    ).toBe(false);
  });

  it('maps outages to a generic 503 and unknown errors to a generic 500', () => {
    const db = toPlatformError(pgRefused);
    expect(db.error).toMatchObject({
      status: 503,
      errorType: 'service_unavailable',
      payload: { dependency: 'database' },
    });
    expect(db.error.message).not.toContain('ECONNREFUSED');
    expect(toPlatformError(grpcUnavailable).error.payload).toEqual({ dependency: 'temporal' });
    const unknown = toPlatformError(new TypeError('x is undefined'));
    expect(unknown).toMatchObject({ unexpected: true, error: { status: 500, errorType: 'internal' } });
    expect(unknown.error.message).not.toContain('undefined');
  });

  it('passes platform refusals through unchanged', () => {
    const e = new ConflictError('taken', { code: 'JOB_ID_TAKEN' });
    expect(toPlatformError(e)).toEqual({ error: e, unexpected: false });
    expect(new BadRequestError('x').status).toBe(400);
    expect(new PlatformError('gone', 'x').status).toBe(410);
  });
});
