import Router from '@koa/router';
import { RequestContext, type EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import { z } from 'zod';
import { PROPOSAL_STATUSES } from '../../shared/action-review/types.js';
import { principalRef, type Principal } from '../../shared/auth/principal.js';
import type { Permission } from '../../shared/auth/rbac.js';
import { ProposalRowEntity } from '../../shared/db/entities/index.js';
import { BadRequestError, ForbiddenError, PlatformError } from '../../shared/errors.js';
import { workflowUrl } from '../../shared/temporal/workflow-url.js';
import { findThread, getOwnThread, listMessages, type ThreadRecord } from '../../shared/threads/store.js';
import { approveAndExecuteUpdate, approveUpdate, rejectUpdate } from '../../workflows/action-review-definitions.js';
import { FULL_DETAIL, proposalDetail } from '../../shared/action-review/detail.js';
import { executeProposal } from '../../shared/action-review/execute.js';
import { listVisibleProposals } from '../../shared/action-review/list.js';
import { reconcileProposal } from '../../shared/action-review/reconcile.js';
import { sendUpdate } from '../../shared/action-review/updates.js';
import { rowView } from '../../shared/action-review/views.js';
import { findVisibleProposal } from '../../shared/action-review/subject-probes.js';
import { listApprovals } from '../../shared/crm/approval-list.js';
import { approvalWithProposal, executeApproval, findApproval } from '../../shared/crm/merge-approvals.js';
import { approveApproval, rejectApproval } from '../../shared/crm/merge-decisions.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { describeError, type Logger } from '../../shared/log.js';
import { toPlatformError } from '../middleware/errors.js';
import type { ReadBody } from '../http/body.js';
import { html } from './html.js';
import { CONSOLE_CSP, consoleAssets, layout, type PageContext } from './layout.js';
import { mergePage, mergesPage } from './pages/merges.js';
import { inboxPage, proposalPage, type Outcome } from './pages/proposals.js';
import { threadPage, threadsPage } from './pages/threads.js';
import {
  createSession,
  csrfMatches,
  deleteSession,
  findSession,
  SESSION_COOKIE,
  sessionCookieOptions,
  type ConsoleSession,
} from './session.js';
import {
  beginSignIn,
  CALLBACK_PATH,
  completeSignIn,
  localAdmin,
  safeReturnTo,
  SignInError,
  signInUnavailableReason,
} from './sign-in.js';
import { sql } from '../../shared/db/sql.js';
import { ActionReviewCodes } from '../../shared/action-review/refusals.js';

const API = { surface: 'api' as const, threadId: null };

/** Fixed notices after a successful form post (redirect-after-post; nothing from the request is echoed). */
const NOTICES: Record<string, string> = {
  approved: 'Approved.',
  rejected: 'Rejected.',
  'approved-and-executed': 'Approved and executed.',
  executed: 'Execution finished; the outcome is below.',
  reconciled: 'Reconciled.',
  'merge-approved': 'Merge approved.',
  'merge-rejected': 'Merge rejected.',
  'merge-executed': 'Merge execution finished; the outcome is below.',
};

interface Console {
  deps: AppDeps;
  em: EntityManager;
  ctx: Koa.Context;
  session: ConsoleSession;
  page: PageContext;
  principal: Principal;
}

const em = (): EntityManager => {
  const found = RequestContext.getEntityManager() as EntityManager | undefined;
  if (!found) throw new Error('no request context for the console');
  return found;
};

function sendHtml(ctx: Koa.Context, status: number, body: string) {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
}

function errorPage(ctx: Koa.Context, page: PageContext, status: number, title: string, message: string) {
  sendHtml(
    ctx,
    status,
    layout(
      page,
      title,
      html`<div class="refusal" role="alert" data-testid="refusal"><p class="text">${message}</p></div>
        <p><a href="/console/proposals">Back to the inbox</a></p>`,
    ),
  );
}

const anonymous = (deps: AppDeps): PageContext => ({
  principal: null,
  csrfToken: null,
  localAdmin: deps.config.auth.provider === 'none',
});

function requirePermission(principal: Principal, permission: Permission, personOnly = false) {
  if (personOnly && principal.kind !== 'person')
    throw new ForbiddenError(`Only people decide here; you are signed in as ${principal.kind}.`);
  if (!principal.permissions.has(permission))
    throw new ForbiddenError(`Permission denied: this needs the "${permission}" permission.`);
}

/** The form fields a decision may carry. */
const DecideForm = z.object({
  reason: z.string().trim().max(4_000).optional(),
  expected_version: z.coerce.number().int().min(1).optional(),
  expected_payload_digest: z.string().max(200).optional(),
});
const ReconcileForm = z.object({
  final_status: z.enum(['executed', 'not_applied']),
  note: z.string().trim().max(4_000).optional(),
});
const ExecuteMergeForm = z.object({ connection_name: z.string().min(1).max(100) });
const ListQuery = z.object({
  status: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]))
    .pipe(z.array(z.enum(PROPOSAL_STATUSES))),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

function parseForm<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success)
    throw new BadRequestError(
      `The form is not valid: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'form'}: ${i.message}`).join('; ')}`,
    );
  if (JSON.stringify(parsed.data).includes('\\u0000')) throw new BadRequestError('The form contains a NUL character.');
  return parsed.data;
}

/** Reads the session (making one for the local admin when auth is off); null when nobody is signed in. */
async function resolveSession(deps: AppDeps, ctx: Koa.Context): Promise<ConsoleSession | null> {
  const manager = em();
  const cookie = ctx.cookies.get(SESSION_COOKIE);
  const found = await findSession(manager, cookie);
  if (found) return found;
  if (deps.config.auth.provider !== 'none') return null;
  const created = await createSession(manager, await localAdmin(deps, manager), deps.config.console.sessionTtlSeconds);
  ctx.cookies.set(SESSION_COOKIE, created.cookie, sessionCookieOptions(ctx));
  return created.session;
}

type Handler = (c: Console) => Promise<void>;

/**
 * Signed-in console pages: the session, then the form's body (read only for a signed-in caller: `readBody`, a
 * urlencoded form or JSON within the API's size limit), CSRF on every POST, errors as HTML pages.
 */
function pages(deps: AppDeps, readBody: ReadBody) {
  return (handler: Handler): Koa.Middleware =>
    async (ctx) => {
      let pageCtx = anonymous(deps);
      try {
        const session = await resolveSession(deps, ctx);
        if (!session) {
          const returnTo = ctx.method === 'GET' ? ctx.originalUrl : '/console/proposals';
          ctx.status = 303;
          ctx.redirect(`/console/login?return_to=${encodeURIComponent(returnTo)}`);
          return;
        }
        pageCtx = {
          principal: session.principal,
          csrfToken: session.csrfToken,
          localAdmin: session.principal.credential === 'auth_disabled',
        };
        await readBody(ctx, null);
        if (ctx.method === 'POST' && !csrfMatches(session, (ctx.request.body as Record<string, unknown>)?._csrf)) {
          errorPage(
            ctx,
            pageCtx,
            403,
            'Request refused',
            'The form’s security token is missing or does not match your session (CSRF protection). Reload the page and try again.',
          );
          return;
        }
        await handler({ deps, em: em(), ctx, session, page: pageCtx, principal: session.principal });
      } catch (err) {
        // The API's own classification: refusals keep their status, outages become 503, the rest 500.
        const { error, unexpected } = toPlatformError(err);
        const log = ctx.state.log as Logger;
        if (unexpected) log.error('console page failed', describeError(err));
        else if (error.status >= 500)
          log.warn('dependency failure', { error_type: error.errorType, ...describeError(err) });
        errorPage(
          ctx,
          pageCtx,
          error.status,
          error.status === 404 ? 'Not found' : error.status >= 500 ? 'Something went wrong' : 'Refused',
          unexpected
            ? `The page could not be built; the server log has request ${String(ctx.state.requestId)}.`
            : error.message,
        );
      }
    };
}

const noticeFrom = (ctx: Koa.Context): Outcome | null => {
  const done = typeof ctx.query.done === 'string' ? NOTICES[ctx.query.done] : undefined;
  return done ? { kind: 'notice', title: done } : null;
};

async function showProposal(c: Console, id: string, outcome: Outcome | null, status = 200) {
  requirePermission(c.principal, 'APPROVE_AGENT_ACTION');
  const row = await findVisibleProposal(c.em, c.principal, id);
  const detail = await proposalDetail(c.em, c.principal, row, FULL_DETAIL, c.deps.config);
  sendHtml(c.ctx, status, proposalPage(c.page, detail, outcome));
}

/** A refusal rendered on the proposal page with its reason (a 404 stays a plain not-found page). */
async function refusedOnProposal(c: Console, id: string, err: unknown) {
  if (!(err instanceof PlatformError) || err.status === 404) throw err;
  const code = typeof err.payload?.code === 'string' ? ` (${err.payload.code})` : '';
  await showProposal(c, id, { kind: 'refusal', title: `Refused${code}`, detail: err.message }, err.status);
}

const after = (c: Console, path: string, done: string) => {
  c.ctx.status = 303;
  c.ctx.redirect(`${path}?done=${done}`);
};

async function decide(c: Console, kind: 'approve' | 'reject' | 'approve-and-execute') {
  const id = String(c.ctx.params.id);
  const form = parseForm(DecideForm, c.ctx.request.body);
  requirePermission(c.principal, 'APPROVE_AGENT_ACTION', true);
  const row = await findVisibleProposal(c.em, c.principal, id);
  const args = {
    caller: principalRef(c.principal),
    reason: form.reason || null,
    expectedVersion: form.expected_version ?? null,
    expectedPayloadDigest: form.expected_payload_digest ?? null,
  };
  try {
    const answer =
      kind === 'approve-and-execute'
        ? await sendUpdate(c.deps, row.proposalId, approveAndExecuteUpdate, { ...args, origin: API })
        : await sendUpdate(c.deps, row.proposalId, kind === 'approve' ? approveUpdate : rejectUpdate, args);
    if (!answer.ok) {
      const refusal =
        'refusal' in answer
          ? answer.refusal
          : { code: ActionReviewCodes.already_decided, message: 'The proposal was already decided.' };
      await showProposal(c, id, { kind: 'refusal', title: `Refused: ${refusal.code}`, detail: refusal.message }, 409);
      return;
    }
  } catch (err) {
    await refusedOnProposal(c, id, err);
    return;
  }
  after(
    c,
    `/console/proposals/${encodeURIComponent(id)}`,
    kind === 'approve' ? 'approved' : kind === 'reject' ? 'rejected' : 'approved-and-executed',
  );
}

async function ownThreads(manager: EntityManager, principal: Principal): Promise<ThreadRecord[]> {
  const rows = await sql<{ id: string }>(
    manager,
    `select id from conversation_threads where tenant = ? and owner_id = ? order by created_at desc limit 200`,
    [principal.tenant, principal.id],
  );
  const threads = await Promise.all(rows.map((r) => findThread(manager, r.id)));
  return threads.filter((t): t is ThreadRecord => t !== null);
}

/** The review console under /console: server-rendered pages over the same services the JSON routes use. */
export function consoleRouter(deps: AppDeps, readBody: ReadBody): Router {
  const router = new Router();
  const page = pages(deps, readBody);
  const assets = consoleAssets();

  router.use(async (ctx, next) => {
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('X-Frame-Options', 'DENY');
    await next();
    if (!ctx.path.startsWith('/console/static/')) ctx.set('Cache-Control', 'no-store');
  });

  for (const asset of [assets.css, assets.countdown]) {
    router.get(asset.path, (ctx) => {
      ctx.type = asset.type;
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.body = asset.body;
    });
  }

  router.get('/console', (ctx) => {
    ctx.redirect('/console/proposals');
  });

  router.get('/console/login', async (ctx) => {
    const returnTo = safeReturnTo(ctx.query.return_to);
    if (deps.config.auth.provider === 'none') return ctx.redirect(returnTo);
    const unavailable = signInUnavailableReason(deps);
    if (unavailable) return errorPage(ctx, anonymous(deps), 503, 'Sign-in is not configured', unavailable);
    const signedOut = ctx.query.signed_out === '1';
    sendHtml(
      ctx,
      200,
      layout(
        anonymous(deps),
        'Sign in',
        html`${signedOut ? html`<p class="notice" role="status">You are signed out.</p>` : ''}
          <p>Sign in with your organisation’s identity provider to review what agents may do.</p>
          <p>
            <a
              class="button"
              href="/console/login/start?return_to=${encodeURIComponent(returnTo)}"
              data-testid="sign-in"
              >Sign in</a
            >
          </p>`,
      ),
    );
  });

  router.get('/console/login/start', async (ctx) => {
    const unavailable = signInUnavailableReason(deps);
    if (deps.config.auth.provider === 'none') return ctx.redirect('/console/proposals');
    if (unavailable) return errorPage(ctx, anonymous(deps), 503, 'Sign-in is not configured', unavailable);
    try {
      ctx.redirect(await beginSignIn(deps, em(), ctx, safeReturnTo(ctx.query.return_to)));
    } catch (err) {
      if (!(err instanceof PlatformError)) throw err;
      errorPage(ctx, anonymous(deps), err.status, 'Sign-in failed', err.message);
    }
  });

  router.get(CALLBACK_PATH, async (ctx) => {
    try {
      const { principal, returnTo } = await completeSignIn(deps, em(), ctx, ctx.query);
      await deleteSession(em(), ctx.cookies.get(SESSION_COOKIE));
      const { cookie } = await createSession(em(), principal, deps.config.console.sessionTtlSeconds);
      ctx.cookies.set(SESSION_COOKIE, cookie, sessionCookieOptions(ctx));
      ctx.redirect(returnTo);
    } catch (err) {
      if (!(err instanceof PlatformError)) throw err;
      const status = err instanceof SignInError ? 401 : err.status;
      sendHtml(
        ctx,
        status,
        layout(
          anonymous(deps),
          'Sign-in failed',
          html`<div class="refusal" role="alert"><p class="text">${err.message}</p></div>
            <p><a href="/console/login">Start again</a></p>`,
        ),
      );
    }
  });

  router.post(
    '/console/logout',
    page(async (c) => {
      await deleteSession(c.em, c.ctx.cookies.get(SESSION_COOKIE));
      c.ctx.cookies.set(SESSION_COOKIE, '', { ...sessionCookieOptions(c.ctx), maxAge: 0, expires: new Date(0) });
      c.ctx.status = 303;
      c.ctx.redirect('/console/login?signed_out=1');
    }),
  );

  router.get(
    '/console/proposals',
    page(async (c) => {
      requirePermission(c.principal, 'APPROVE_AGENT_ACTION');
      const q = parseForm(ListQuery, c.ctx.query);
      const limit = q.limit;
      const list = await listVisibleProposals(c.em, c.principal, {
        status: q.status,
        actionType: [],
        offset: q.offset,
        limit,
      });
      sendHtml(
        c.ctx,
        200,
        inboxPage(c.page, {
          rows: list.rows.map((r) => rowView(r, { scope: 'headline', includeStatement: false })),
          totalCount: list.totalCount,
          truncated: list.truncated,
          incompleteReason: list.incompleteReason,
          offset: q.offset,
          limit,
          statuses: q.status,
        }),
      );
    }),
  );

  router.get(
    '/console/proposals/:id',
    page((c) => showProposal(c, String(c.ctx.params.id), noticeFrom(c.ctx))),
  );
  router.post(
    '/console/proposals/:id/approve',
    page((c) => decide(c, 'approve')),
  );
  router.post(
    '/console/proposals/:id/reject',
    page((c) => decide(c, 'reject')),
  );
  router.post(
    '/console/proposals/:id/approve-and-execute',
    page((c) => decide(c, 'approve-and-execute')),
  );
  router.post(
    '/console/proposals/:id/execute',
    page(async (c) => {
      const id = String(c.ctx.params.id);
      requirePermission(c.principal, 'APPROVE_AGENT_ACTION');
      const answer = await executeProposal(c.deps, c.em, c.principal, id, API);
      if (!answer.claimed && answer.refusal_reason) {
        await showProposal(
          c,
          id,
          { kind: 'refusal', title: `Refused: ${answer.refusal_reason}`, detail: answer.refusal_detail },
          409,
        );
        return;
      }
      after(c, `/console/proposals/${encodeURIComponent(id)}`, 'executed');
    }),
  );
  router.post(
    '/console/proposals/:id/reconcile',
    page(async (c) => {
      const id = String(c.ctx.params.id);
      const form = parseForm(ReconcileForm, c.ctx.request.body);
      requirePermission(c.principal, 'APPROVE_AGENT_ACTION', true);
      const row = await findVisibleProposal(c.em, c.principal, id);
      const answer = await reconcileProposal(
        c.deps,
        c.em,
        c.principal,
        row.proposalId,
        form.final_status,
        form.note || null,
      );
      if (!answer.resolved) {
        await showProposal(
          c,
          id,
          { kind: 'refusal', title: `Refused: ${answer.refusal.code}`, detail: answer.refusal.message },
          409,
        );
        return;
      }
      after(c, `/console/proposals/${encodeURIComponent(id)}`, 'reconciled');
    }),
  );

  router.get(
    '/console/merges',
    page(async (c) => {
      requirePermission(c.principal, 'view_connections');
      const list = await listApprovals(c.deps, c.em, c.principal, { offset: 0, limit: 100 });
      sendHtml(c.ctx, 200, mergesPage(c.page, list));
    }),
  );

  const showMerge = async (c: Console, id: string, outcome: Outcome | null, status = 200) => {
    requirePermission(c.principal, 'view_connections');
    const approval = await approvalWithProposal(c.em, await findApproval(c.em, c.principal, id));
    sendHtml(c.ctx, status, mergePage(c.page, approval, workflowUrl(c.deps.config, approval.workflow_id), outcome));
  };
  const refusedOnMerge = async (c: Console, id: string, err: unknown) => {
    if (!(err instanceof PlatformError) || err.status === 404) throw err;
    const code = typeof err.payload?.code === 'string' ? `: ${err.payload.code}` : '';
    await showMerge(c, id, { kind: 'refusal', title: `Refused${code}`, detail: err.message }, err.status);
  };

  router.get(
    '/console/merges/:id',
    page((c) => showMerge(c, String(c.ctx.params.id), noticeFrom(c.ctx))),
  );
  for (const kind of ['approve', 'reject'] as const) {
    router.post(
      `/console/merges/:id/${kind}`,
      page(async (c) => {
        const id = String(c.ctx.params.id);
        const form = parseForm(DecideForm.pick({ reason: true }), c.ctx.request.body);
        requirePermission(c.principal, 'APPROVE_AGENT_ACTION', true);
        try {
          await (kind === 'approve' ? approveApproval : rejectApproval)(
            c.deps,
            c.em,
            c.principal,
            id,
            form.reason || null,
          );
        } catch (err) {
          await refusedOnMerge(c, id, err);
          return;
        }
        after(c, `/console/merges/${encodeURIComponent(id)}`, kind === 'approve' ? 'merge-approved' : 'merge-rejected');
      }),
    );
  }
  router.post(
    '/console/merges/:id/execute',
    page(async (c) => {
      const id = String(c.ctx.params.id);
      const form = parseForm(ExecuteMergeForm, c.ctx.request.body);
      requirePermission(c.principal, 'APPROVE_AGENT_ACTION');
      const answer = await executeApproval(c.deps, c.em, c.principal, id, form.connection_name, API);
      if (!answer.claimed && answer.refusal_reason) {
        await showMerge(
          c,
          id,
          { kind: 'refusal', title: `Refused: ${answer.refusal_reason}`, detail: answer.refusal_detail },
          409,
        );
        return;
      }
      after(c, `/console/merges/${encodeURIComponent(id)}`, 'merge-executed');
    }),
  );

  router.get(
    '/console/threads',
    page(async (c) => sendHtml(c.ctx, 200, threadsPage(c.page, await ownThreads(c.em, c.principal)))),
  );
  router.get(
    '/console/threads/:id',
    page(async (c) => {
      const thread = await getOwnThread(c.em, c.principal, String(c.ctx.params.id));
      const [messages, proposals] = await Promise.all([
        listMessages(c.em.fork(), thread.id),
        c.em
          .fork()
          .find(ProposalRowEntity, { tenant: thread.tenant, threadId: thread.id }, { orderBy: { createdAt: 'asc' } }),
      ]);
      sendHtml(c.ctx, 200, threadPage(c.page, thread, messages, proposals));
    }),
  );

  return router;
}
