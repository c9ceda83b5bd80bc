import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The project root, whatever the current directory. */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Git-ignored folder for tools the project installs itself (the Temporal wheels). */
export const toolsDir = path.join(projectRoot, '.tools');
/** Git-ignored folder for local state (embedded PostgreSQL data, the dev server's SQLite file). */
export const dataDir = process.env.PLATFORM_DATA_DIR
  ? path.resolve(process.env.PLATFORM_DATA_DIR)
  : path.join(projectRoot, '.data');
