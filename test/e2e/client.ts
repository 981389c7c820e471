/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the tests check them */
import { waitFor } from '@dam/testing';
import type { Suite } from './suite';

/** Who a request is from: a JWT (sent as a bearer token), or headers of their own (an API key). */
export type Credentials = string | Record<string, string>;

/** The calls the end-to-end tests make through the public addresses, as one user by default. */
export function apiClient(suite: () => Suite, defaultToken: () => string) {
  const headersOf = (as: Credentials): Record<string, string> => (typeof as === 'string' ? { authorization: `Bearer ${as}` } : as);

  /** A JSON request to `{base}`; the answer's body parsed when it is JSON. */
  async function call(
    method: string,
    path: string,
    body?: unknown,
    as: Credentials = defaultToken(),
  ): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(`${suite().base}${path}`, {
      method,
      headers: { ...headersOf(as), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text, headers: res.headers };
  }

  /** One file through `{upload}`; its asset id. */
  async function upload(bytes: Buffer, name: string, as: Credentials = defaultToken()): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([bytes]), name);
    const res = await fetch(`${suite().upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: headersOf(as), body: form });
    if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as any).files[0].id;
  }

  /** Get Data once the asset is no longer NOT_READY. */
  const settled = (id: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const d = await call('GET', `/api/v1/assets/${id}/data`);
        return d.body?.status && d.body.status !== 'NOT_READY' ? d.body : undefined;
      },
      { timeoutMs, intervalMs: 200, description: `${id} processed` },
    );

  return { call, upload, settled };
}
