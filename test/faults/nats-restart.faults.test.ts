import type { Suite } from '../e2e/suite';
import { describeOutage } from './outage';

// The suite's nats-server stops (a clean shutdown) and starts again on the same port with the same store.
describeOutage({
  dependency: 'NATS',
  suiteOptions: {},
  stop: async (suite) => (await natsOf(suite)).pause(),
  start: async (suite) => (await natsOf(suite)).resume(),
  // Every service holding a NATS connection (the gateway's readiness is its upstreams').
  readiness: Object.fromEntries(['addon', 'auth', 'conversion', 'link-signing', 'metadata', 'search', 'transcode', 'upload', 'webhook'].map((s) => [s, 'nats'])),
});

async function natsOf(suite: Suite) {
  if (!suite.nats) throw new Error('the suite runs on no single nats-server');
  return suite.nats;
}
