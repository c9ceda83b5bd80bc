/**
 * `npm run chaos`: a secret re-seal (enabling the encryption key), a worker SIGKILLed each time the
 * one before it made progress, `CHAOS_KILLS` times: the cases of tests/secrets/rotation.test.ts, run
 * here (see ./support.ts).
 */
import { underChaos } from './support.js';

await underChaos('tests/secrets/rotation.test.ts', () => import('../secrets/rotation.test.js'));
