import type { Suite } from '../e2e/suite';
import { describeOutage } from './outage';

// The S3 server goes away for the suite: its fault proxy resets every connection and refuses new ones (what the
// services see when the server process is gone), then lets traffic through again. The shared S3 server itself keeps
// running for the other test files; a restart of the real server with its data read back is
// libs/testing/test/durable-s3.int.test.ts.
describeOutage({
  dependency: 'S3',
  suiteOptions: { proxies: { s3: true } },
  stop: async (suite) => proxyOf(suite).down(),
  start: async (suite) => proxyOf(suite).pass(),
  readiness: Object.fromEntries(['addon', 'conversion', 'link-signing', 'metadata', 'transcode', 'upload'].map((s) => [s, 's3'])),
});

function proxyOf(suite: Suite) {
  if (!suite.proxies.s3) throw new Error('the suite reaches S3 through no proxy');
  return suite.proxies.s3;
}
