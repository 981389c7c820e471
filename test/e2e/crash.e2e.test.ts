import sharp from 'sharp';
import { scaled, waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { useSuite } from './suite';

// The killed worker's command comes back from JetStream after ACK_WAIT_MS; before that, metadata sees the job's
// lease run out (no report for JOB_LEASE_MS) and hands the job out again, which is what finishes it here.
const ACK_WAIT_MS = '10000';
const JOB_LEASE_MS = '2000';

const e2e = useSuite({
  // STARTED goes out at once, so the job shows IN_PROGRESS as soon as the worker holds it.
  conversion: { ACK_WAIT_MS, CONCURRENCY: '1', JOB_HEARTBEAT_MS: '500', JOB_START_REPORT_DELAY_MS: '0' },
  metadata: { JOB_LEASE_MS, JOB_SWEEP_INTERVAL_MS: '300' },
});
let events: Awaited<ReturnType<typeof watchAssetEvents>>;

beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
});
e2e.beforeStop(() => events?.close());

interface JobView {
  asset_ids: string[];
  status: string;
  progress: number;
  steps: Array<{ status: string }>;
}

async function jobOf(jwt: string, assetId: string): Promise<JobView | undefined> {
  const res = await fetch(`${e2e.suite.base}/api/v1/jobs?type=processing&page_size=100`, { headers: { authorization: `Bearer ${jwt}` } });
  return ((await res.json()) as { items: JobView[] }).items.find((j) => j.asset_ids.includes(assetId));
}

it('finishes the job and reaches OK with exactly one public file-processed after the worker is killed mid-job', async () => {
  const { jwt } = e2e;
  // Outputs that take seconds to encode, so the kill lands while the worker works on any machine: the thumbnail alone
  // of the image below took 0.5 s on an idle machine, which ended the job before the test saw it running.
  const big = (width: number, format: string) => ({ width, format, fit: 'inside' });
  const settings = await fetch(`${e2e.suite.base}/api/v1/settings`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      conversions: {
        profile: { image: ['thumb', 'bigA', 'bigB', 'bigC'] },
        custom: { thumb: { width: 200, height: 200 }, bigA: big(3000, 'webp'), bigB: big(3500, 'webp'), bigC: big(3999, 'png') },
      },
    }),
  });
  expect(settings.status).toBe(200);
  const png = await sharp({
    create: { width: 4000, height: 4000, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  })
    .png({ compressionLevel: 1 })
    .toBuffer();
  const form = new FormData();
  form.append('file', new Blob([png]), 'big.png');
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}` },
    body: form,
  });
  expect(res.status).toBe(200);
  const id = ((await res.json()) as { files: { id: string }[] }).files[0]?.id;
  expect(id).toBeDefined();

  const conversion = e2e.suite.services.conversion;
  if (!conversion) throw new Error('conversion service missing');
  await conversion.waitForLog(new RegExp(`conversion started.*${id}|${id}.*conversion started`), 60000);
  // Killed once metadata knows the worker holds the job (its first report renewed the lease).
  let seen: string | undefined;
  await waitFor(
    async () => {
      seen = (await jobOf(jwt, id ?? ''))?.status;
      return seen === 'IN_PROGRESS' || seen === 'COMPLETED' || seen === 'ERROR';
    },
    { timeoutMs: 10000, intervalMs: 50 },
  );
  expect(seen).toBe('IN_PROGRESS'); // ended before the kill: the scenario did not happen
  conversion.kill('SIGKILL');
  expect(conversion.logs().join('\n')).not.toMatch(new RegExp(`conversion finished.*${id}|${id}.*conversion finished`));

  await e2e.suite.restart('conversion');

  await waitFor(
    async () => {
      const data = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/data`, { headers: { authorization: `Bearer ${jwt}` } });
      return ((await data.json()) as { status: string }).status === 'OK';
    },
    { timeoutMs: 90000, intervalMs: 500 },
  );
  // The job was handed out again by its lease, not by JetStream's redelivery.
  expect(e2e.suite.services.metadata?.logs().some((l) => l.includes('job lease ran out: handed out again'))).toBe(true);
  expect(await jobOf(jwt, id ?? '')).toMatchObject({ status: 'COMPLETED', progress: 100, steps: [{ status: 'COMPLETED' }] });
  const data = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/data`, { headers: { authorization: `Bearer ${jwt}` } });
  expect(Object.keys(((await data.json()) as { conversions: object }).conversions).sort()).toEqual(['bigA', 'bigB', 'bigC', 'thumb']);
  // Give the redelivered first command (and its duplicate result) a chance to show up before counting: the ack wait
  // (the server's clock), then the time its conversion and report would take (longer on a slower machine).
  await new Promise((r) => setTimeout(r, Number(ACK_WAIT_MS) + scaled(2000)));
  const processed = events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed');
  expect(processed).toHaveLength(1);
  expect(processed[0]?.status).toBe('OK');
});
