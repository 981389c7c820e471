/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { waitFor } from '@dam/testing';
import { useSuite } from './suite';

/**
 * Security review F17 (b): a `cdn` link minted with an API key outlived the key (only accessID rotation or disabling
 * the user ended it). Now a key's links carry the key's own accessID, which auth resolves only while the key is live.
 */
const e2e = useSuite();

type Headers = Record<string, string>;
const asAdmin = (): Headers => ({ authorization: `Bearer ${e2e.jwt}` });
const asKey = (key: string): Headers => ({ 'x-service-api-key': key });

async function call(method: string, url: string, headers: Headers, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${url}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const statusOf = async (url: string): Promise<number> => {
  const res = await fetch(url);
  await res.body?.cancel();
  return res.status;
};

it('a cdn link minted with an API key stops when the key is revoked; the same URL shape, other links unaffected', async () => {
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('linked by a key')]), 'key-link.txt');
  const uploaded = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: asAdmin(), body: form });
  expect(uploaded.status).toBe(200);
  const id = ((await uploaded.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
  await waitFor(async () => (await call('GET', `/api/v1/assets/${id}/data`, asAdmin())).body?.status === 'OK', {
    timeoutMs: 60_000,
    intervalMs: 200,
    description: `${id} processed`,
  });

  const mint = async (name: string) => (await call('POST', '/api/v1/api_keys', asAdmin(), { name, role: 'ADMIN' })).body as { key_id: string; key: string };
  const [revoked, kept] = [await mint('links-a'), await mint('links-b')];
  const linkOf = async (headers: Headers): Promise<string> => {
    const res = await call('GET', `/api/v1/assets/${id}/get_link`, headers);
    expect(res.status).toBe(200);
    return res.body.url as string;
  };
  const [byRevoked, byKept, signedIn] = [await linkOf(asKey(revoked.key)), await linkOf(asKey(kept.key)), await linkOf(asAdmin())];
  // The specified shape: only the accessId's value says which credential minted it.
  for (const url of [byRevoked, byKept]) expect([...new URL(url).searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'signature']);
  expect(await statusOf(byRevoked)).toBe(200);

  expect((await call('DELETE', `/api/v1/api_keys/${revoked.key_id}`, asAdmin())).status).toBe(200);
  // The edge reuses auth's answer about an accessID a few seconds (CDN_ACCESS_CACHE_TTL_MS).
  const refused = await waitFor(
    async () => {
      const res = await fetch(byRevoked);
      if (res.status !== 403) await res.body?.cancel();
      return res.status === 403 && res;
    },
    { timeoutMs: 15_000, intervalMs: 500, description: "the revoked key's link answers 403" },
  );
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('ACCESS_REVOKED');
  expect(await statusOf(byKept)).toBe(200);
  expect(await statusOf(signedIn)).toBe(200);
  // The revoked key mints nothing more (401 at the gateway).
  expect((await call('GET', `/api/v1/assets/${id}/get_link`, asKey(revoked.key))).status).toBe(401);
  // Because each key's links carry the key's own accessID, not the user's.
  expect(new URL(byRevoked).searchParams.get('accessId')).not.toBe(new URL(signedIn).searchParams.get('accessId'));
});
