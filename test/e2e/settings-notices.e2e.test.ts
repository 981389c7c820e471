import sharp from 'sharp';
import { waitFor } from '@dam/testing';
import { useSuite } from './suite';

/**
 * Services keep a group's settings until auth announces a change (NATS): a change must still apply to the very
 * next upload and request, although conversion and metadata read the old settings a moment before.
 */
const e2e = useSuite();
const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

const patchSettings = async (body: unknown) => {
  const res = await fetch(`${e2e.suite.base}/api/v1/settings`, {
    method: 'PATCH',
    headers: { ...auth(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
};
const data = async (id: string) =>
  (await (await fetch(`${e2e.suite.base}/api/v1/assets/${id}/data`, { headers: auth() })).json()) as { status: string; conversions: Record<string, unknown> };

async function uploadImage(name: string): Promise<string> {
  const png = await sharp({ create: { width: 320, height: 200, channels: 3, background: { r: 10, g: 120, b: 200 } } })
    .png()
    .toBuffer();
  const form = new FormData();
  form.append('file', new Blob([png], { type: 'image/png' }), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
  expect(res.status).toBe(200);
  const id = ((await res.json()) as { files: Array<{ id: string }> }).files[0]!.id;
  await waitFor(async () => (await data(id)).status === 'OK', { timeoutMs: 30_000, intervalMs: 100, description: `${name} OK` });
  return id;
}

describe('a settings change reaches services that keep settings', () => {
  it('applies to the next upload and the next process request at once', async () => {
    await patchSettings({ conversions: { custom: { first: { width: 64, format: 'png' } }, profile: { image: ['first'] } } });
    const before = await uploadImage('before.png');
    expect(Object.keys((await data(before)).conversions)).toEqual(['first']);
    // conversion and metadata hold the group's settings now; the change goes out as a notice with the answer.
    await patchSettings({ conversions: { custom: { second: { width: 32, format: 'webp' } }, profile: { image: ['second'] } } });
    const after = await uploadImage('after.png');
    expect(Object.keys((await data(after)).conversions)).toEqual(['second']);
    // metadata's check of the keys a process request may name uses the new settings too.
    const res = await fetch(`${e2e.suite.base}/api/v1/assets/${before}/process`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ keys: ['second'] }),
    });
    expect(res.status).toBe(202);
    await waitFor(async () => (await data(before)).conversions.second !== undefined, { timeoutMs: 30_000, description: 'second made on request' });
  });
});
