/**
 * Provenance of every setting (`GET /api/config/setup/sources` without path or section) through the
 * HTTP API versus the accessor it wraps (`Settings.sources` over every schema path), in one process.
 */
import { Settings } from '../shared/settings/store.js';
import { SETTING_PATHS } from '../shared/settings/definitions.js';
import { measure, measurePair, report } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';

export async function benchSettingsSources(stack: BenchStack, count: number, concurrency: number): Promise<string> {
  const settings = new Settings(stack.api.deps.orm, stack.config);
  const viaApi = {
    label: 'HTTP API',
    op: async () => {
      const res = await fetch(`${stack.api.url}/api/config/setup/sources`);
      if (res.status !== 200) throw new Error(`sources answered ${res.status}: ${await res.text()}`);
      const body = (await res.json()) as { data: { count: number } };
      if (body.data.count !== SETTING_PATHS.length) throw new Error(`sources resolved ${body.data.count} paths`);
    },
  };
  const bare = {
    label: 'accessor',
    op: async () => {
      const all = await settings.sources(SETTING_PATHS);
      if (all.length !== SETTING_PATHS.length) throw new Error('accessor resolved too few paths');
    },
  };
  await measure('warm-up', 20, 4, async () => {
    await viaApi.op();
    await bare.op();
  });
  const [api, baseline] = await measurePair(viaApi, bare, count, concurrency);
  return report(
    `Provenance of all ${SETTING_PATHS.length} settings, ${count} reads at concurrency ${concurrency}`,
    api,
    baseline,
  );
}
