import { managedAgentId } from '../../shared/managed-sources/hydrate.js';
import { query } from './db.js';

/** Inserts the row a managed-source sync writes for an imported agent (`msa_<source hex>_<agent_id>`); answers its id. */
export async function insertImportedAgent(
  dbUrl: string,
  sourceId: string,
  manifestId: string,
  name: string,
): Promise<string> {
  const id = managedAgentId(sourceId, manifestId);
  await query(
    dbUrl,
    `insert into agents (id, tenant, name, instructions, tool_groups, access, source, is_editable, created_by,
       created_at, updated_at, managed_source_id)
     values ($1, 'default', $2, 'Imported.', '[]', '{"roles": [], "users": []}', 'managed', false, 'system',
       now(), now(), $3)`,
    [id, name, sourceId],
  );
  return id;
}
