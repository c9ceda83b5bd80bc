/** `npm run migrate`: applies pending migrations to DATABASE_URL (used by docker-compose's migrate service). */
import { loadConfig } from '../shared/config.js';
import { initOrm, migrate } from '../shared/db/orm.js';

const config = loadConfig();
if (!config.databaseUrl) {
  console.error('DATABASE_URL is not set');
  process.exit(1);
}
const orm = await initOrm({ clientUrl: config.databaseUrl });
try {
  const applied = await migrate(orm);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'schema is up to date');
} finally {
  await orm.close();
}
