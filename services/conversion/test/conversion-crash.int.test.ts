import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { jobReport, publishEvent } from '@dam/events';
import { scaled, startJobHarness, startServiceProcess, startSettingsStub, type JobHarness, type ServiceProcess } from '@dam/testing';

jest.setTimeout(scaled(120_000));

const SETTINGS = {
  conversions: {
    custom: { thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 } },
    profile: { image: ['thumb'] },
  },
};

// pino writes `msg` last, so match the fields in any order.
const logLine = (msg: string, assetId: string): RegExp => new RegExp(`^(?=.*"msg":"${msg}")(?=.*"asset_id":"${assetId}")`);

describe('conversion crash mid-work', () => {
  let h: JobHarness;
  let auth: Awaited<ReturnType<typeof startSettingsStub>>;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    h = await startJobHarness('conversion');
    auth = await startSettingsStub(h.identities, () => ({ status: 200, body: SETTINGS }));
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await auth?.close();
    await h?.close();
  });

  it('redoes the work after SIGKILL and the report is stored once', async () => {
    // Noise does not compress: a large original keeps the first process busy when the kill arrives.
    const side = 2000;
    const bytes = await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const checksum = await h.putOriginal('g1', 'big', bytes);
    // A short ack wait brings the killed process's message back soon; scaled, so that the survivor's own work (kept
    // alive every second) is not taken for a dead worker's on a slower machine.
    const env = h.env({ AUTH_URL: auth.url, SETTINGS_MAX_AGE_MS: '0', ACK_WAIT_MS: String(scaled(2000)) });

    const first = await startServiceProcess('conversion', env);
    services.push(first);
    await h.publishJob('g1', 'big', { checksum, contentType: 'image/png' });
    await first.waitForLog(logLine('conversion started', 'big'), 30_000);
    first.kill('SIGKILL');
    await expect(first.exited).resolves.toMatchObject({ signal: 'SIGKILL' });

    const second = await startServiceProcess('conversion', env);
    services.push(second);
    const report = await h.reportFor('big', 60_000);
    expect(report).toMatchObject({ source_checksum: checksum, image: { width: side, height: side }, errors: {} });
    expect(report.conversions.thumb).toMatchObject({ width: 200, height: 200 });
    expect(await h.storage.stat(report.conversions.thumb?.object_key ?? '')).toMatchObject({ size: report.conversions.thumb?.size });

    // The message was not acked by the killed process, so the second one got it again.
    await second.waitForLog(logLine('conversion finished', 'big'), 30_000);
    expect(first.logs().some((l) => /"msg":"conversion finished"/.test(l))).toBe(false);

    // A crash between publish and ack makes the next process publish the same report again: the stream keeps
    // one copy only if the service used the report id as Nats-Msg-Id.
    const final = await h.finalReportFor('big');
    const again = await publishEvent(h.js, jobReport('conversion').subject, jobReport('conversion').schema, final, { msgId: final.id });
    expect(again.duplicate).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));
    expect(h.reports.filter((r) => r.asset_id === 'big')).toHaveLength(1);
  });
});
