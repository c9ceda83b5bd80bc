import type { ConversationMessage, ProposalRow } from '../../../shared/db/entities/index.js';
import type { ThreadRecord } from '../../../shared/threads/store.js';
import { toIso } from '../../../shared/dates.js';
import { dataTable, html } from '../html.js';
import { dateText, layout, type PageContext } from '../layout.js';
import { statusBadge } from './proposals.js';

export function threadsPage(page: PageContext, threads: ThreadRecord[]): string {
  const rows = threads.map(
    (t) =>
      html`<tr>
        <td><a href="/console/threads/${encodeURIComponent(t.id)}">${t.title ?? t.id}</a></td>
        <td><code>${t.agentId}</code></td>
        <td>${t.origin ?? '—'}</td>
        <td>${dateText(toIso(t.createdAt))}</td>
      </tr>`,
  );
  const body = rows.length
    ? dataTable(['Thread', 'Agent', 'Origin', 'Started'], rows)
    : html`<p>You own no threads yet.</p>`;
  return layout(page, 'My threads', body, { current: '/console/threads' });
}

export function threadPage(
  page: PageContext,
  thread: ThreadRecord,
  messages: ConversationMessage[],
  proposals: ProposalRow[],
): string {
  const items = messages.map((m) => {
    const meta = m.metadata ?? {};
    const handback = meta.kind === 'action_review_decision';
    const proposalId = typeof meta.proposal_id === 'string' ? meta.proposal_id : null;
    return html`<article class="message${handback ? ' handback' : ''}" ${handback ? html` data-testid="handback"` : ''}>
      <p class="meta">
        ${handback ? 'Hand-back from Action Review' : m.role} · ${m.authorKind} ${m.authorId} ·
        ${dateText(toIso(m.createdAt))}
      </p>
      <div class="text">${m.content}</div>
      ${handback && proposalId ? html`<p><a href="/console/proposals/${encodeURIComponent(proposalId)}">Open the proposal</a></p>` : ''}
    </article>`;
  });
  const raised = proposals.map(
    (p) =>
      html`<li>
        <a href="/console/proposals/${encodeURIComponent(p.proposalId)}">${p.actionType}</a>
        ${statusBadge(p.status === 'resolved' && p.finalStatus ? p.finalStatus : p.status)}
      </li>`,
  );
  const body = html`<dl class="facts">
      <dt>Agent</dt>
      <dd><code>${thread.agentId}</code></dd>
      ${
        thread.callerGoal
          ? html`<dt>Goal</dt>
              <dd class="text">${thread.callerGoal}</dd>`
          : ''
      }
      <dt>Started</dt>
      <dd>${dateText(toIso(thread.createdAt))}</dd>
    </dl>
    <h2>Proposals raised</h2>
    ${
      raised.length
        ? html`<ul data-testid="raised">
            ${raised}
          </ul>`
        : html`<p>None.</p>`
    }
    <h2>Messages</h2>
    ${items.length ? items : html`<p>No messages yet.</p>`}`;
  return layout(page, thread.title ?? `Thread ${thread.id}`, body, { current: '/console/threads' });
}
