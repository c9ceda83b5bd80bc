import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project root: the nearest folder above this module holding `package.json` (the repository
 * when run from source, `/app` in the image where this module is `dist/shared/`).
 */
export const projectRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, '..');
  }
}

/**
 * The one rule for configured paths (README, Configuration): a relative path is relative to the
 * project root, whatever the current directory of `npm start`, the worker or the API.
 */
export const fromProjectRoot = (p: string): string => path.resolve(projectRoot, p);
