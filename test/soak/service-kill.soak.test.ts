import { useSuite } from '../e2e/suite';
import { ALL_SERVICES, killScenarioOverrides, runKillScenario } from '../faults/kill-scenario';

// Issue 14, long version of test/faults/service-kill.faults.test.ts: 200 uploads, every service SIGKILLed twice at
// seeded random moments. `pnpm test:soak test/soak/service-kill.soak.test.ts`; replay with KILL_SEED=<printed seed>.
const e2e = useSuite(killScenarioOverrides(), { services: ALL_SERVICES });

it(
  'keeps every promise made to clients through two SIGKILLs of each service',
  async () => {
    const kills = [...ALL_SERVICES, ...ALL_SERVICES];
    const report = await runKillScenario(e2e, { uploads: 200, concurrency: 6, kills, largeEvery: 12, videos: 4, convergeMs: 90_000 });
    expect(report.kills).toHaveLength(kills.length);
    expect(report.assets.ok).toBeGreaterThanOrEqual(report.files / 2);
    expect(report.violations).toEqual([]);
  },
  20 * 60_000,
);
