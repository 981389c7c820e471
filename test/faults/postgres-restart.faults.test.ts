import type { Suite } from '../e2e/suite';
import { describeOutage } from './outage';

// The suite's own PostgreSQL stops (pg_ctl stop -m fast: every connection is terminated) and starts again on the same
// port with the same data.
describeOutage({
  dependency: 'PostgreSQL',
  suiteOptions: { ownPostgres: true },
  stop: async (suite) => postgresOf(suite).pause(),
  start: async (suite) => postgresOf(suite).resume(),
  readiness: Object.fromEntries(['addon', 'auth', 'metadata', 'search', 'webhook'].map((s) => [s, 'postgres'])),
});

function postgresOf(suite: Suite) {
  if (!suite.postgres) throw new Error('the suite runs on no PostgreSQL of its own');
  return suite.postgres;
}
