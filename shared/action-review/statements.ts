/**
 * Requested statements stored by reference (spec, Errors: `proposal_text_unavailable`). A statement
 * longer than STATEMENT_INLINE_MAX_BYTES is stored once in `action_review_statements` under its SHA-256
 * and the proposal names it (`statement_ref` = `sha256:<hex>`); shorter ones stay inline. Reading the
 * statement rejoins the text and checks it against its digest: text that is missing or no longer matches
 * is refused with 409 `proposal_text_unavailable`, and so is approving the proposal (a person cannot
 * approve what cannot be shown); rejecting it stays possible.
 */
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ProposalRow } from '../db/entities/index.js';
import { sql, sqlOne } from '../db/sql.js';
import { ConflictError } from '../errors.js';
import { ActionReviewCodes } from './refusals.js';

/** Statements up to this many bytes (UTF-8) are stored inline in the proposal row. */
export const STATEMENT_INLINE_MAX_BYTES = 4096;

const refOf = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

/** Where a new proposal's statement goes: inline, or stored now and named by reference. */
export async function placeStatement(
  em: EntityManager,
  statement: string | null,
): Promise<{ requestedStatement: string | null; statementRef: string | null }> {
  if (statement === null || Buffer.byteLength(statement, 'utf8') <= STATEMENT_INLINE_MAX_BYTES)
    return { requestedStatement: statement, statementRef: null };
  const ref = refOf(statement);
  await sql(em, 'insert into action_review_statements (digest, text) values (?, ?) on conflict (digest) do nothing', [
    ref,
    statement,
  ]);
  return { requestedStatement: null, statementRef: ref };
}

/** The proposal's statement (inline or rejoined); 409 `proposal_text_unavailable` when a reference cannot be rejoined. */
export async function statementOf(
  em: EntityManager,
  row: Pick<ProposalRow, 'proposalId' | 'requestedStatement' | 'statementRef'>,
): Promise<string | null> {
  if (!row.statementRef) return row.requestedStatement;
  const stored = await sqlOne<{ text: string }>(em, 'select text from action_review_statements where digest = ?', [
    row.statementRef,
  ]);
  if (stored && refOf(stored.text) === row.statementRef) return stored.text;
  throw new ConflictError(
    `The requested statement of proposal ${row.proposalId} is stored by reference and cannot be rejoined; the proposal cannot be approved, but it may still be rejected.`,
    {
      code: ActionReviewCodes.proposal_text_unavailable,
      proposal_id: row.proposalId,
      statement_ref: row.statementRef,
      can_reject: true,
    },
  );
}

/** A list row's statement: rejoined when possible, else null (one unreadable text does not fail the inbox). */
export async function statementOrNull(
  em: EntityManager,
  row: Pick<ProposalRow, 'proposalId' | 'requestedStatement' | 'statementRef'>,
): Promise<string | null> {
  return statementOf(em, row).catch((err: unknown) => {
    if (err instanceof ConflictError) return null;
    throw err;
  });
}

/** Rows whose statements are rejoined for a read that includes them (an unreadable one reads null). */
export function withStatements<R extends Pick<ProposalRow, 'proposalId' | 'requestedStatement' | 'statementRef'>>(
  em: EntityManager,
  rows: R[],
): Promise<R[]> {
  return Promise.all(
    rows.map(async (r) => (r.statementRef ? { ...r, requestedStatement: await statementOrNull(em, r) } : r)),
  );
}
