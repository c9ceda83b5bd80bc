import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';

/** How many adopted learnings an agent's instructions carry (the newest), and how much of each. */
export const LEARNINGS_IN_INSTRUCTIONS = 20;
export const LEARNING_CHARS_IN_INSTRUCTIONS = 2_000;

export interface AdoptedLearning {
  proposal_id: string;
  learning_id: string;
  title: string;
  content: string;
  adopted_by: string;
  adopted_at: string;
}

/**
 * The learnings adopted (`learning.adopt.v1`, executed) for an agent: those naming it, and those adopted
 * for every agent of its tenant; oldest first, at most the newest `LEARNINGS_IN_INSTRUCTIONS`. Read on
 * every model call, so an adoption reaches the agent's next turn.
 */
export async function adoptedLearningsFor(
  em: EntityManager,
  tenant: string,
  agentId: string,
): Promise<AdoptedLearning[]> {
  const rows = await sql<Omit<AdoptedLearning, 'adopted_at'> & { adopted_at: Date | string }>(
    em,
    `select proposal_id, learning_id, title, content, adopted_by, adopted_at from adopted_learnings
      where tenant = ? and (agent_ids is null or ? = any(agent_ids))
      order by adopted_at desc, proposal_id desc limit ?`,
    [tenant, agentId, LEARNINGS_IN_INSTRUCTIONS],
  );
  return rows.reverse().map((r) => ({
    ...r,
    adopted_at: (r.adopted_at instanceof Date ? r.adopted_at : new Date(r.adopted_at)).toISOString(),
  }));
}

/** The block the learnings add to an agent's system message (empty when there are none). */
export function learningsBlock(learnings: readonly AdoptedLearning[]): string {
  if (!learnings.length) return '';
  const items = learnings.map((l) => {
    const text =
      l.content.length > LEARNING_CHARS_IN_INSTRUCTIONS
        ? `${l.content.slice(0, LEARNING_CHARS_IN_INSTRUCTIONS)}…`
        : l.content;
    return `- ${l.title}: ${text}`;
  });
  return `Learnings adopted for you through Action Review (follow them):\n${items.join('\n')}`;
}
