import { it } from 'vitest';

/**
 * A lifecycle whose one-kill test lives in its feature's folder (and runs there in `npm test`), run
 * here by `npm run chaos` with `CHAOS_KILLS` kills: `load` imports that test file, so its hooks and
 * cases register in this file and read `CHAOS_KILLS` as they do there. Without `CHAOS_KILLS` (`npm
 * test`) nothing is imported and one skipped case says where the one-kill pass runs.
 */
export async function underChaos(oneKillFile: string, load: () => Promise<unknown>): Promise<void> {
  if (process.env.CHAOS_KILLS) await load();
  else it.skip(`runs under npm run chaos (CHAOS_KILLS set); npm test runs ${oneKillFile} with one kill`, () => {});
}
