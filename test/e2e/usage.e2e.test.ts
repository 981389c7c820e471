/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { makeVideo, scaled, waitFor } from '@dam/testing';
import { CORE_SERVICES, login, useSuite } from './suite';

// Usage records flushed and storage measured often, so the test sees them in seconds.
const e2e = useSuite({ gateway: { USAGE_FLUSH_MS: '300' }, metadata: { STORAGE_GAUGE_INTERVAL_MS: '500' } }, { services: [...CORE_SERVICES, 'transcode'] });
const { call, upload, settled } = e2e.api;
const total = async (metric: string, userId: number) => (await call('GET', `/api/v1/usage/${metric}?user_id=${userId}`)).body.total as number;
describe('usage statistics through the suite (CONTRACT §9)', () => {
  it('counts exactly the API requests a user made', async () => {
    const user = (await call('POST', '/api/v1/users', { email: 'counted@example.com', password: 'counted-password-1', role_id: 3 })).body;
    const token = await login(e2e.suite.base, 'counted@example.com', 'counted-password-1');
    for (let i = 0; i < 7; i++) expect((await call('GET', '/api/v1/users/me', undefined, token)).status).toBe(200);
    expect((await call('GET', '/api/v1/settings', undefined, token)).status).toBe(403); // counted too: a request made
    await waitFor(async () => (await total('api_requests', user.user_id)) === 8, { description: 'eight requests counted' });
    // Time for a wrong extra count to be flushed (300 ms) and stored (longer on a slower machine).
    await new Promise((r) => setTimeout(r, scaled(1000)));
    expect(await total('api_requests', user.user_id)).toBe(8);
    expect((await call('GET', '/api/v1/usage/api_requests', undefined, token)).status).toBe(403);
  });

  it("counts the bytes the edge served for a user's links", async () => {
    const body = Buffer.from('usage bytes '.repeat(500));
    const id = await upload(body, 'served.txt');
    await settled(id);
    const before = await total('cdn_bytes', 1);
    const url = (await call('GET', `/api/v1/assets/${id}/get_link`)).body.url as string;
    for (let i = 0; i < 3; i++) expect((await fetch(url).then(async (r) => Buffer.from(await r.arrayBuffer()))).length).toBe(body.length);
    await waitFor(async () => (await total('cdn_bytes', 1)) === before + 3 * body.length, { description: 'three downloads counted' });
  });

  it('counts the seconds of video transcoded, and the bytes stored', async () => {
    expect((await call('PATCH', '/api/v1/settings', { conversions: { profile: { video: ['360p-video'] } } })).status).toBe(200);
    const id = await upload(await makeVideo({ seconds: 2, width: 640, height: 360 }), 'clip.mp4');
    const data = await settled(id);
    expect(data.status).toBe('OK');
    await waitFor(async () => (await total('transcode_seconds', 1)) === data.metadata.duration, { description: 'the transcode counted' });

    // Every asset of the admin, originals and conversions, as Get Data tells them.
    const search = await call('POST', '/api/v1/assets/search', { page_size: 100, extended: true });
    const stored = (search.body.results as any[]).reduce(
      (sum, a) => sum + a.size + Object.values(a.conversions as Record<string, { size: number }>).reduce((s, c) => s + c.size, 0),
      0,
    );
    await waitFor(async () => (await total('storage_bytes', 1)) === stored, { description: 'storage measured' });
  });
});
