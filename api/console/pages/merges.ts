import type { z } from 'zod';
import type { ApprovalViewSchema } from '../../../shared/crm/approval-views.js';
import { dataTable, html, safeHref, type Html } from '../html.js';
import { csrfField, dateText, layout, type PageContext } from '../layout.js';
import { outcomeBlock, statusBadge, type Outcome } from './proposals.js';

type Approval = z.output<typeof ApprovalViewSchema>;

interface ProjectionRecord {
  id: string;
  role: string;
  last_modified?: string;
  fields: Record<string, unknown>;
}

const show = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

export function mergesPage(
  page: PageContext,
  list: { approvals: Approval[]; total_count: number; truncated: boolean; incomplete_reason: string | null },
): string {
  const rows = list.approvals.map(
    (a) =>
      html`<tr>
        <td><a href="/console/merges/${encodeURIComponent(a.approval_id)}">${a.record_kind} ${a.survivor_id}</a></td>
        <td>${statusBadge(a.status)}</td>
        <td>${a.connection_name}</td>
        <td>${a.loser_ids.length}</td>
        <td>${dateText(a.expires_at)}</td>
      </tr>`,
  );
  const body = html`${list.truncated ? html`<p class="refusal" role="status">The list is incomplete (${list.incomplete_reason ?? 'truncated'}).</p>` : ''}
    <p>${list.total_count === 0 ? 'No merge approvals.' : `${list.total_count} merge approvals.`}</p>
    ${rows.length ? dataTable(['Survivor', 'Status', 'Connection', 'Losers', 'Expires'], rows) : ''}`;
  return layout(page, 'CRM merge approvals', body, { current: '/console/merges' });
}

/** Survivor and losers side by side on the policy's preview fields, with the projected value and its source. */
function sideBySide(projection: Record<string, unknown>): Html {
  const records = (Array.isArray(projection.records) ? projection.records : []) as ProjectionRecord[];
  const fields = (
    Array.isArray(projection.preview_fields)
      ? projection.preview_fields
      : Object.keys((projection.projected_survivor as Record<string, unknown> | undefined) ?? {})
  ) as string[];
  const projected = (projection.projected_survivor ?? {}) as Record<string, unknown>;
  const sources = (projection.field_sources ?? {}) as Record<string, unknown>;
  const rows = fields.map(
    (f) =>
      html`<tr>
        <th scope="row">${f}</th>
        ${records.map((r) => html`<td class="text">${show(r.fields?.[f])}</td>`)}
        <td class="projected text">${show(projected[f])}</td>
        <td><code>${show(sources[f])}</code></td>
      </tr>`,
  );
  const columns = [
    'Field',
    ...records.map((r) => html`${r.role === 'survivor' ? 'Survivor' : 'Loser'} <code>${r.id}</code>`),
    'After the merge',
    'Value from',
  ];
  return dataTable(columns, rows, { className: 'side-by-side' });
}

export function mergePage(page: PageContext, a: Approval, workflowUrl: string | null, outcome: Outcome | null): string {
  const principal = page.principal!;
  const mayReview = principal.permissions.has('APPROVE_AGENT_ACTION');
  const person = principal.kind === 'person';
  const open = a.status === 'awaiting_approval';
  const id = encodeURIComponent(a.approval_id);
  const forms: Html[] = [];
  if (open && mayReview && person) {
    forms.push(
      html`<form method="post" action="/console/merges/${id}/approve">
        ${csrfField(page)} <label for="approve-reason">Reason (optional)</label
        ><textarea id="approve-reason" name="reason" rows="2" maxlength="4000"></textarea>
        <button type="submit" data-expires-with-countdown>Approve merge</button>
      </form>`,
    );
  }
  if ((open || a.status === 'approved') && mayReview && person) {
    forms.push(
      html`<form method="post" action="/console/merges/${id}/reject">
        ${csrfField(page)} <label for="reject-reason">Reason</label
        ><textarea id="reject-reason" name="reason" rows="2" maxlength="4000" required></textarea>
        <button type="submit" class="danger">Reject merge</button>
      </form>`,
    );
  }
  if (a.status === 'approved' && mayReview) {
    forms.push(
      html`<form method="post" action="/console/merges/${id}/execute">
        ${csrfField(page)}
        <input type="hidden" name="connection_name" value="${a.connection_name}" />
        <p>Runs the merge once on connection <code>${a.connection_name}</code>; the digest is checked again first.</p>
        <button type="submit" data-expires-with-countdown>Execute merge</button>
      </form>`,
    );
  }
  const live = open || a.status === 'approved';
  const body = html`${outcomeBlock(outcome)}
    <dl class="facts">
      <dt>Status</dt>
      <dd data-testid="status">
        ${statusBadge(a.status)}${a.final_status ? html` → ${statusBadge(a.final_status)}` : ''}
      </dd>
      <dt>Connection</dt>
      <dd><code>${a.connection_name}</code></dd>
      <dt>Record kind</dt>
      <dd>${a.record_kind}</dd>
      <dt>Requested by</dt>
      <dd>${show(a.requested_by.label ?? a.requested_by.id)}</dd>
      <dt>Digest</dt>
      <dd><code data-testid="digest">${a.digest}</code></dd>
      <dt>Policy</dt>
      <dd>${a.policy_version}</dd>
      <dt>Expires</dt>
      <dd>
        ${dateText(a.expires_at)}${
          live
            ? html` —
                <time
                  class="countdown"
                  data-countdown
                  datetime="${a.expires_at}"
                  data-testid="countdown"
                  aria-live="polite"
                  >${timeLeft(a.expires_at)}</time
                >`
            : ''
        }
      </dd>
      ${
        a.decision_reason
          ? html`<dt>Decision reason</dt>
              <dd class="text">${a.decision_reason}</dd>`
          : ''
      }
      <dt>Proposal</dt>
      <dd><a href="/console/proposals/${id}">Action Review proposal</a></dd>
      <dt>Workflow</dt>
      <dd>
        ${workflowUrl ? html`<a href="${safeHref(workflowUrl)}" rel="noopener">Open in the Temporal UI</a>` : 'Temporal UI not configured (TEMPORAL_UI_URL)'}
      </dd>
    </dl>
    <h2>Survivor and losers</h2>
    ${sideBySide(a.projection)}
    ${
      a.final_status || a.execution_refusal_reason || a.execution_error_detail
        ? html`<h2>Outcome</h2>
            ${a.final_status ? html`<p data-testid="outcome">Final status: ${statusBadge(a.final_status)}</p>` : ''}
            ${a.execution_result ? html`<pre>${JSON.stringify(a.execution_result, null, 2)}</pre>` : ''}
            ${a.execution_refusal_reason ? html`<p class="refusal">Not applied: ${a.execution_refusal_reason}</p>` : ''}
            ${a.execution_error_detail ? html`<p class="refusal text">Error: ${a.execution_error_detail}</p>` : ''}`
        : ''
    }
    <h2>Decide</h2>
    ${forms.length ? html`<div class="actions">${forms}</div>` : html`<p data-testid="no-actions">No action is available to you on this ${a.status.replace(/_/g, ' ')} approval.</p>`}`;
  return layout(page, `Merge ${a.record_kind} ${a.survivor_id}`, body, {
    current: '/console/merges',
    scripts: ['countdown'],
  });
}

/** The server's own rendering of the time left (the script keeps it live). */
function timeLeft(expiresAt: string): string {
  const left = Math.floor((Date.parse(expiresAt) - Date.now()) / 1000);
  if (left <= 0) return 'Expired';
  const m = Math.floor(left / 60);
  return `${m}:${String(left % 60).padStart(2, '0')} left`;
}
