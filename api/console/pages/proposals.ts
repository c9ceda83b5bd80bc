import type { ActionType } from '../../../shared/action-review/action-types.js';
import { PROPOSAL_STATUSES } from '../../../shared/action-review/types.js';
import type { ProposalDetail } from '../../../shared/action-review/views.js';
import type { rowView } from '../../../shared/action-review/views.js';
import { dataTable, html, join, safeHref, type Html } from '../html.js';
import { csrfField, dateText, layout, type PageContext } from '../layout.js';

type Row = ReturnType<typeof rowView>;

export interface Outcome {
  kind: 'notice' | 'refusal';
  title: string;
  detail?: string | null;
}

export const outcomeBlock = (o: Outcome | null | undefined) =>
  o
    ? html`<div class="${o.kind}" role="${o.kind === 'refusal' ? 'alert' : 'status'}" data-testid="${o.kind}">
        <strong>${o.title}</strong>${o.detail ? html`<p class="text">${o.detail}</p>` : ''}
      </div>`
    : '';

export const statusBadge = (status: string) => html`<span class="status">${status.replace(/_/g, ' ')}</span>`;

export function inboxPage(
  page: PageContext,
  list: {
    rows: Row[];
    totalCount: number;
    truncated: boolean;
    incompleteReason: string | null;
    offset: number;
    limit: number;
    statuses: string[];
  },
): string {
  const query = (offset: number) => {
    const q = new URLSearchParams();
    for (const s of list.statuses) q.append('status', s);
    q.set('offset', String(offset));
    q.set('limit', String(list.limit));
    return `/console/proposals?${q.toString()}`;
  };
  const filters = html`<form method="get" action="/console/proposals" class="filters">
    <fieldset>
      <legend>Status</legend>
      ${PROPOSAL_STATUSES.map(
        (s) =>
          html`<label
            ><input type="checkbox" name="status" value="${s}" ${list.statuses.includes(s) ? html` checked` : ''} />
            ${s.replace(/_/g, ' ')}</label
          >`,
      )}
    </fieldset>
    <button type="submit">Filter</button>
  </form>`;
  const rows = list.rows.map(
    (r) =>
      html`<tr>
        <td><a href="/console/proposals/${encodeURIComponent(r.proposal_id)}">${r.action_type}</a></td>
        <td>${statusBadge(r.effective_status)}</td>
        <td>${r.requester.label} <span class="status">${r.requester_kind}</span></td>
        <td class="text">${r.expected_effect}</td>
        <td>${dateText(r.created_at)}</td>
      </tr>`,
  );
  const last = Math.min(list.offset + list.rows.length, list.totalCount);
  const body = html`${filters}
    ${
      list.truncated
        ? html`<p class="refusal" role="status" data-testid="incomplete">
            The list is incomplete (${list.incompleteReason ?? 'truncated'}): more proposals exist than were looked at.
          </p>`
        : ''
    }
    <p>
      ${list.totalCount === 0 ? 'No proposals match.' : `Showing ${list.offset + 1}–${last} of ${list.totalCount}.`}
    </p>
    ${
      list.rows.length
        ? dataTable(['Action', 'Status', 'Requested by', 'Expected effect', 'Created'], rows, { caption: 'Proposals' })
        : ''
    }
    <nav class="pager" aria-label="Pages">
      ${
        list.offset > 0
          ? html`<a href="${query(Math.max(0, list.offset - list.limit))}" rel="prev">Previous page</a>`
          : ''
      }${list.offset + list.limit < list.totalCount ? html`<a href="${query(list.offset + list.limit)}" rel="next">Next page</a>` : ''}
    </nav>`;
  return layout(page, 'Action Review inbox', body, { current: '/console/proposals' });
}

/** Fields shown first, with labels, for the action types a reviewer sees most; the rest follow as they are. */
const PRIMARY_FIELDS: Partial<Record<ActionType, Array<[string, string]>>> = {
  'ticket.write.v1': [
    ['title', 'Title'],
    ['body', 'Body'],
    ['labels', 'Labels'],
  ],
  'learning.adopt.v1': [
    ['title', 'Title'],
    ['content', 'Content'],
    ['learning_id', 'Learning id'],
    ['agent_ids', 'Adopted for agents'],
  ],
  'local_cli.run.v1': [
    ['command', 'Command'],
    ['args', 'Arguments'],
    ['cwd', 'Working directory'],
  ],
  'crm.merge.v1': [
    ['connection_name', 'Connection'],
    ['record_kind', 'Record kind'],
    ['survivor_id', 'Survivor'],
    ['loser_ids', 'Losers'],
  ],
};

const valueCell = (v: unknown): Html =>
  typeof v === 'string'
    ? html`<div class="text">${v}</div>`
    : Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? html`${(v as string[]).join(', ')}`
      : html`<pre>${JSON.stringify(v, null, 2)}</pre>`;

export function payloadBlock(actionType: ActionType, payload: unknown): Html {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    return html`<pre>${JSON.stringify(payload, null, 2)}</pre>`;
  const fields = payload as Record<string, unknown>;
  const primary = (PRIMARY_FIELDS[actionType] ?? []).filter(([k]) => k in fields);
  const rest = Object.keys(fields).filter((k) => !primary.some(([p]) => p === k));
  const rows = [
    ...primary.map(
      ([k, label]) =>
        html`<tr>
          <th scope="row">${label}</th>
          <td>${valueCell(fields[k])}</td>
        </tr>`,
    ),
    ...rest.map(
      (k) =>
        html`<tr>
          <th scope="row"><code>${k}</code></th>
          <td>${valueCell(fields[k])}</td>
        </tr>`,
    ),
  ];
  return html`<div class="table-wrap">
    <table class="payload">
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

function decideForm(page: PageContext, p: ProposalDetail, kind: 'approve' | 'reject' | 'approve-and-execute'): Html {
  const label = { approve: 'Approve', reject: 'Reject', 'approve-and-execute': 'Approve and execute' }[kind];
  const reasonId = `reason-${kind}`;
  return html`<form method="post" action="/console/proposals/${encodeURIComponent(p.proposal_id)}/${kind}">
    ${csrfField(page)}
    <input type="hidden" name="expected_version" value="${p.decision_context.expected_version}" />
    <input type="hidden" name="expected_payload_digest" value="${p.decision_context.payload_digest}" />
    <label for="${reasonId}">Reason${kind === 'reject' ? '' : ' (optional)'}</label>
    <textarea
      id="${reasonId}"
      name="reason"
      rows="2"
      maxlength="4000"
      ${kind === 'reject' ? html` required` : ''}
    ></textarea>
    <button type="submit" ${kind === 'reject' ? html` class="danger"` : ''}>${label}</button>
  </form>`;
}

/** The buttons this viewer may use on a proposal in this status (the workflow still decides). */
function actionForms(page: PageContext, p: ProposalDetail): Html {
  const principal = page.principal!;
  const mayReview = principal.permissions.has('APPROVE_AGENT_ACTION');
  const person = principal.kind === 'person';
  const forms: Html[] = [];
  if (p.status === 'requested' && mayReview && person) {
    forms.push(decideForm(page, p, 'approve'), decideForm(page, p, 'reject'));
    if (!p.approving_is_the_action && p.action_type !== 'crm.merge.v1')
      forms.push(decideForm(page, p, 'approve-and-execute'));
  }
  if (p.status === 'approved' && !p.claimed && mayReview && p.action_type !== 'crm.merge.v1')
    forms.push(
      html`<form method="post" action="/console/proposals/${encodeURIComponent(p.proposal_id)}/execute">
        ${csrfField(page)}
        <p>Approved: run the effect now (once).</p>
        <button type="submit">Execute</button>
      </form>`,
    );
  if (p.status === 'reconciliation_required' && mayReview && person)
    forms.push(
      html`<form method="post" action="/console/proposals/${encodeURIComponent(p.proposal_id)}/reconcile">
        ${csrfField(page)}
        <label for="final-status">What did you find?</label>
        <select id="final-status" name="final_status">
          <option value="executed">The effect was applied (executed)</option>
          <option value="not_applied">It was not applied</option>
        </select>
        <label for="note">Note (optional)</label><textarea id="note" name="note" rows="2" maxlength="4000"></textarea>
        <button type="submit">Reconcile</button>
      </form>`,
    );
  if (forms.length === 0) {
    const why =
      p.status !== 'requested' && p.status !== 'approved' && p.status !== 'reconciliation_required'
        ? `Nothing left to decide: the proposal is ${p.status.replace(/_/g, ' ')}.`
        : !mayReview
          ? 'You lack the APPROVE_AGENT_ACTION permission.'
          : !person
            ? 'Only people decide proposals.'
            : p.action_type === 'crm.merge.v1'
              ? 'This merge is executed from its merge review page.'
              : 'No action is available.';
    return html`<p data-testid="no-actions">${why}</p>`;
  }
  return html`<div class="actions">${forms}</div>`;
}

export function proposalPage(page: PageContext, p: ProposalDetail, outcome: Outcome | null): string {
  const events = (p.events ?? []).map(
    (e) =>
      html`<tr>
        <td>${e.seq}</td>
        <td>${e.type.replace(/_/g, ' ')}</td>
        <td>${e.actor.label}</td>
        <td class="text">${e.reason ?? ''}</td>
        <td>${dateText(e.occurred_at)}</td>
      </tr>`,
  );
  const result =
    p.execution_receipt || p.execution_error_detail || p.execution_refusal_reason
      ? html`<h2>Execution</h2>
          ${
            p.execution_receipt
              ? html`<h3>Receipt</h3>
                  <pre data-testid="receipt">${JSON.stringify(p.execution_receipt, null, 2)}</pre>`
              : ''
          }
          ${p.execution_refusal_reason ? html`<p class="refusal">Not applied: <strong>${p.execution_refusal_reason}</strong>${p.execution_refusal_detail ? html` — <span class="text">${p.execution_refusal_detail}</span>` : ''}</p>` : ''}
          ${p.execution_error_detail ? html`<p class="refusal">Error: <span class="text">${p.execution_error_detail}</span></p>` : ''}`
      : '';
  const body = html`${outcomeBlock(outcome)}
    <dl class="facts">
      <dt>Action</dt>
      <dd><code>${p.action_type}</code></dd>
      <dt>Status</dt>
      <dd data-testid="status">
        ${statusBadge(p.status)}${p.final_status ? html` → ${statusBadge(p.final_status)}` : ''}
      </dd>
      <dt>Requested by</dt>
      <dd>${p.requester.label} (${p.requester_kind}${p.bot_id ? html`, agent <code>${p.bot_id}</code>` : ''})</dd>
      ${
        p.thread_id
          ? html`<dt>Thread</dt>
              <dd><a href="/console/threads/${encodeURIComponent(p.thread_id)}">${p.thread_id}</a></dd>`
          : ''
      }
      <dt>Created</dt>
      <dd>${dateText(p.created_at)}</dd>
      ${
        p.decided_by_label
          ? html`<dt>Decided by</dt>
              <dd>
                ${p.decided_by_label}${p.decision_reason ? html` — <span class="text" data-testid="decision-reason">${p.decision_reason}</span>` : ''}
              </dd>`
          : ''
      }
      ${
        p.handback
          ? html`<dt>Hand-back</dt>
              <dd>${p.handback.status}</dd>`
          : ''
      }
      <dt>Workflow</dt>
      <dd>
        ${p.workflow_url ? html`<a href="${safeHref(p.workflow_url)}" rel="noopener">Open in the Temporal UI</a>` : 'Temporal UI not configured (TEMPORAL_UI_URL)'}
      </dd>
      ${
        p.action_type === 'crm.merge.v1'
          ? html`<dt>Merge review</dt>
              <dd><a href="/console/merges/${encodeURIComponent(p.proposal_id)}">Review the merge</a></dd>`
          : ''
      }
    </dl>
    ${p.approving_is_the_action ? html`<p class="runs-it" data-testid="runs-it">Approving runs it: approving this proposal applies the change at once.</p>` : ''}
    <h2>Expected effect</h2>
    <div class="text" data-testid="expected-effect">${p.expected_effect}</div>
    <h2>Payload</h2>
    ${payloadBlock(p.action_type, p.payload)} ${result}
    <h2>Decide</h2>
    ${actionForms(page, p)}
    <h2>Event trail</h2>
    ${dataTable(['#', 'Event', 'By', 'Reason', 'When'], join(events))}`;
  return layout(page, `Proposal ${p.proposal_id}`, body, { current: '/console/proposals' });
}
