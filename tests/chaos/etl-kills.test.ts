/**
 * `npm run chaos`: `CHAOS_KILLS` ETL runs, each SIGKILLed mid-run with its worker (each ends
 * `interrupted`, run once, its stranded job ended): the cases of tests/etl/etl-worker-crash.test.ts,
 * run here (see ./support.ts).
 */
import { underChaos } from './support.js';

await underChaos('tests/etl/etl-worker-crash.test.ts', () => import('../etl/etl-worker-crash.test.js'));
