import path from 'node:path';
import { dataDirOf } from '../../shared/config.js';
import { projectRoot } from '../../shared/project-root.js';

export { projectRoot };
/** Git-ignored folder for tools the project installs itself (the Temporal wheels). */
export const toolsDir = path.join(projectRoot, '.tools');
/** Git-ignored folder for local state (embedded PostgreSQL data, the dev server's SQLite file): the config's `dataDir`. */
export const dataDir = dataDirOf(process.env);
