import { randomUUID } from 'node:crypto';
import { EgressError, egressFetch } from '../../http/egress.js';
import { egressFor } from '../../http/trust.js';
import { EffectOutcomeUnknownError, notApplied, type Executor } from './types.js';
import { EgressCodes } from '../../http/egress-policy.js';
import { DemoCodes } from '../../demo/error-codes.js';
import { TrackerCodes } from '../../tracker/error-codes.js';

/**
 * Creates an issue in the configured tracker (`POST {TICKET_TRACKER_URL}/issues`) with the
 * proposal id as idempotency key. A refused connection or a 4xx wrote nothing (`not_applied`);
 * a reset, timeout or 5xx after sending may have created the issue, so that outcome is unknown.
 */
export const ticketWriteExecutor: Executor<'ticket.write.v1'> = {
  actionType: 'ticket.write.v1',
  async execute(payload, ctx) {
    const { ticketTrackerUrl, ticketTrackerToken } = ctx.config.actionReview;
    if (!ticketTrackerUrl)
      return notApplied(DemoCodes.TICKETING_SETUP_REQUIRED, 'No issue tracker is configured (TICKET_TRACKER_URL).');
    let res: Response;
    try {
      res = await egressFetch(
        new URL('issues', ticketTrackerUrl.endsWith('/') ? ticketTrackerUrl : `${ticketTrackerUrl}/`),
        {
          // TICKET_TRACKER_URL is the operator's choice (shared/http/trust.ts).
          policy: egressFor(ctx.config, 'operator'),
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': ctx.proposalId,
            ...(ticketTrackerToken ? { authorization: `Bearer ${ticketTrackerToken}` } : {}),
          },
          body: JSON.stringify({ ...payload, external_id: ctx.proposalId }),
          signal: ctx.signal,
          // The effect's own start-to-close timeout bounds it, as before.
          timeoutMs: ctx.config.actionReview.effectTimeoutSeconds * 1000,
        },
      );
    } catch (err) {
      if (!(err instanceof EgressError)) throw err;
      if (err.code === EgressCodes.egress_refused) {
        return notApplied(
          EgressCodes.egress_refused,
          `The issue tracker's address is not allowed for outbound requests: ${err.message}; nothing was sent.`,
        );
      }
      const code = err.socketCode;
      if (err.sent === false && err.code !== EgressCodes.egress_aborted)
        return notApplied(
          TrackerCodes.tracker_unreachable,
          `The issue tracker could not be reached (${code ?? err.code}); nothing was sent.`,
        );
      const why = ctx.signal.aborted
        ? 'was interrupted (the worker stopped)'
        : `failed after it was sent (${code ?? err.code})`;
      throw new EffectOutcomeUnknownError(
        `The request to the issue tracker ${why}; the ticket may have been created.`,
        { cause: err },
      );
    }
    const text = await res.text();
    if (res.status >= 400 && res.status < 500) {
      // The tracker's body can quote the ticket or echo credentials: the log gets it, the refusal its id.
      const errorId = randomUUID();
      ctx.log.warn('issue tracker refused a ticket', {
        proposal_id: ctx.proposalId,
        error_id: errorId,
        http_status: res.status,
        body: text.slice(0, 2_000),
      });
      return notApplied(
        TrackerCodes.tracker_refused,
        `The issue tracker refused the ticket (HTTP ${res.status}); nothing was created (error_id ${errorId}).`,
      );
    }
    if (!res.ok) {
      throw new EffectOutcomeUnknownError(
        `The issue tracker answered HTTP ${res.status}; the ticket may have been created.`,
        {
          cause: Object.assign(new Error(`tracker answered HTTP ${res.status}`), {
            logDetail: { http_status: res.status, body: text.slice(0, 2_000) },
          }),
        },
      );
    }
    let body: { id?: unknown; url?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // A created ticket whose answer we cannot parse is still created: keep the status in the receipt.
    }
    return {
      outcome: 'executed',
      result: {
        http_status: res.status,
        ticket_id: body.id === undefined ? null : String(body.id),
        ticket_url: typeof body.url === 'string' ? body.url : null,
      },
    };
  },
};
