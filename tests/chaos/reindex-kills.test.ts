/**
 * `npm run chaos`: an embedding re-index whose second batch is held at the fake model, with
 * `CHAOS_KILLS` worker SIGKILLs inside it: the cases of tests/embeddings/reindex.test.ts, run here
 * (see ./support.ts).
 */
import { underChaos } from './support.js';

await underChaos('tests/embeddings/reindex.test.ts', () => import('../embeddings/reindex.test.js'));
