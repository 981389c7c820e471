import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import sharp from 'sharp';
import { Webhook } from 'standardwebhooks';
import { listen, waitFor } from '@dam/testing';
import { useSuite } from './suite';

const e2e = useSuite();
const { call, upload } = e2e.api;
let server: Server;
let hookUrl: string;
const got: Array<{ headers: IncomingHttpHeaders; body: string; event: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), event: String(req.headers['x-asset-event']) });
      res.statusCode = 200;
      res.end();
    });
  });
  hookUrl = `${await listen(server)}/hooks`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
});

const eventsOf = (id: string) => got.filter((g) => JSON.parse(g.body).id === id);

describe('webhooks through the suite (CONTRACT §10)', () => {
  let secret: string;
  let asset: string;

  it('refuses a webhook URL inside the network, and keeps one the operator allows', async () => {
    const bad = await call('PATCH', '/api/v1/settings', { webhooks: { urls: ['https://10.0.0.5/hook'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe('webhooks.urls.0');
    const ok = await call('PATCH', '/api/v1/settings', { webhooks: { urls: [hookUrl] } });
    expect(ok.status).toBe(200);
    secret = ok.body.webhooks.secret;
  });

  it('delivers file-saved then file-processed for an upload, signed, with the asset data format', async () => {
    asset = await upload(
      await sharp({ create: { width: 64, height: 48, channels: 3, background: '#336699' } })
        .png()
        .toBuffer(),
      'hooked.png',
    );
    await waitFor(async () => eventsOf(asset).length >= 2, { timeoutMs: 30_000, description: 'file-saved and file-processed' });
    expect(
      eventsOf(asset)
        .map((g) => g.event)
        .slice(0, 2),
    ).toEqual(['file-saved', 'file-processed']);
    for (const g of eventsOf(asset)) expect(new Webhook(secret).verify(g.body, g.headers as Record<string, string>)).toMatchObject({ id: asset });
    const processed = JSON.parse(eventsOf(asset)[1]!.body);
    const data = (await call('GET', `/api/v1/assets/${asset}/data`)).body;
    expect(processed).toMatchObject({ id: asset, status: 'OK', name: 'hooked.png', checksum: data.checksum });
    // Every member of Get Data's asset data format, in the same order.
    expect(Object.keys(processed)).toEqual(Object.keys(data));
  });

  it('delivers the deletion payload, and lists the deliveries in the log', async () => {
    expect((await call('POST', `/api/v1/assets/${asset}/delete`, { keys: ['original'] })).status).toBe(200);
    await waitFor(async () => eventsOf(asset).some((g) => g.event === 'file-deleted'), { description: 'file-deleted' });
    const deletion = JSON.parse(eventsOf(asset).find((g) => g.event === 'file-deleted')!.body);
    expect(deletion).toEqual({ id: asset, event: 'file-deleted', keys: ['original'], status: 'OK', message: expect.any(String) });
    await waitFor(async () => (await call('GET', '/api/v1/webhooks/deliveries?status=delivered')).body.total >= 3, { description: 'the log' });
    const log = await call('GET', '/api/v1/webhooks/deliveries?status=delivered');
    expect(log.body.items[0]).toMatchObject({
      event: 'file-deleted',
      asset_id: asset,
      url: hookUrl,
      status: 'delivered',
      response_code: 200,
      attempt_count: 1,
    });
  });

  it('signs with the old and the new secret after a rotation', async () => {
    const rotated = await call('PATCH', '/api/v1/settings', { webhooks: { rotate_secret: true } });
    const fresh = rotated.body.webhooks.secret;
    expect(fresh).not.toBe(secret);
    expect(rotated.body.webhooks.previous_secret).toBe(secret);
    const id = await upload(Buffer.from('after rotation'), 'rotated.txt');
    await waitFor(async () => eventsOf(id).length >= 1, { description: 'a delivery after the rotation' });
    const g = eventsOf(id)[0]!;
    for (const s of [secret, fresh]) expect(() => new Webhook(s).verify(g.body, g.headers as Record<string, string>)).not.toThrow();
  });

  it('reissues callbacks for an ASSET_ADMIN API key only, within 7 days, as a job', async () => {
    const key = (await call('POST', '/api/v1/api_keys', { name: 'reissuer', role: 'ASSET_ADMIN' })).body.key as string;
    const adminKey = (await call('POST', '/api/v1/api_keys', { name: 'plain admin', role: 'ADMIN' })).body.key as string;
    const range = { start_date: new Date(Date.now() - 3_600_000).toISOString(), end_date: new Date(Date.now() + 60_000).toISOString() };
    expect((await call('POST', '/api/v1/callbacks/reissue', range)).status).toBe(403);
    expect((await call('POST', '/api/v1/callbacks/reissue', range, { 'x-service-api-key': adminKey })).status).toBe(403);
    const tooLong = { start_date: new Date(Date.now() - 8 * 86_400_000).toISOString(), end_date: range.end_date };
    expect((await call('POST', '/api/v1/callbacks/reissue', tooLong, { 'x-service-api-key': key })).status).toBe(400);
    expect((await call('POST', '/api/v1/callbacks/reissue', { start_date: '2026-01-01', end_date: '2026-01-09' }, { 'x-service-api-key': key })).status).toBe(
      400,
    );
    expect((await call('POST', '/api/v1/callbacks/reissue', { start_date: 'yesterday', end_date: range.end_date }, { 'x-service-api-key': key })).status).toBe(
      400,
    );
    const before = got.length;
    const job = await call('POST', '/api/v1/callbacks/reissue', range, { 'x-service-api-key': key });
    expect(job).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${job.body.job_id}`)).body.status === 'COMPLETED', { description: 'the reissue job' });
    await waitFor(async () => got.length >= before + 4, { description: 'the reissued callbacks' });
    const again = got.slice(before);
    expect(again.every((g) => String(g.headers['webhook-id']).startsWith(`reissue-${job.body.job_id}-`))).toBe(true);
    expect(again.map((g) => JSON.parse(g.body).id)).toContain(asset);
  });
});
