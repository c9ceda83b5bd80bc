/**
 * `npm run chaos`: a rechunk (RECHUNK) whose copy batch is held at the fake model's embedding call,
 * with `CHAOS_KILLS` worker SIGKILLs: the cases of tests/document-index/rechunk-crash.test.ts, run
 * here (see ./support.ts).
 */
import { underChaos } from './support.js';

await underChaos('tests/document-index/rechunk-crash.test.ts', () => import('../document-index/rechunk-crash.test.js'));
