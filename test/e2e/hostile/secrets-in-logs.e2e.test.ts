/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import http from 'node:http';
import { listen, waitFor } from '@dam/testing';
import { ADMIN, ALL_SERVICES, startSuite, type Suite } from '../suite';

/**
 * Issue 14: credentials and secrets never reach a log line. A run uses every kind (a password, a JWT, an upload key
 * in a header and in a URL, an API key, the webhook signing secret, a signed link's signature, a wrong password),
 * at debug level, then every service's log is searched for each of them.
 */
let suite: Suite;
let receiver: http.Server;
let hookUrl: string;
let delivered = 0;

beforeAll(async () => {
  const debug = { LOG_LEVEL: 'debug' };
  suite = await startSuite(Object.fromEntries(ALL_SERVICES.map((n) => [n, debug])), { services: ALL_SERVICES });
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered += 1;
      res.writeHead(200).end('ok');
    });
  });
  hookUrl = `${await listen(receiver)}/hooks`;
});
afterAll(async () => {
  await new Promise((r) => receiver?.close(r));
  await suite?.stop();
});

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });

it('logs none of the secrets a run used', async () => {
  const base = suite.base;
  const login = await json(
    await fetch(`${base}/api/v1/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) }),
  );
  const { jwt, uploadkey } = login.body as { jwt: string; uploadkey: string };
  const auth = { authorization: `Bearer ${jwt}` };
  // A wrong password (its value must not be logged either).
  const wrongPassword = 'wrong-Password-9f3c1e';
  expect(
    (
      await fetch(`${base}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: ADMIN.email, password: wrongPassword }),
      })
    ).status,
  ).toBe(401);

  // Webhooks: a URL, and the signing secret the settings hold.
  expect(
    (
      await fetch(`${base}/api/v1/settings`, {
        method: 'PATCH',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ webhooks: { urls: [hookUrl] } }),
      })
    ).status,
  ).toBe(200);
  const secret = (await json(await fetch(`${base}/api/v1/settings`, { headers: auth }))).body.webhooks.secret as string;

  // An API key, created and used.
  const key = (
    await json(
      await fetch(`${base}/api/v1/api_keys`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'logs', role: 'USER' }),
      }),
    )
  ).body.key as string;
  expect((await fetch(`${base}/api/v1/users/me`, { headers: { 'x-service-api-key': key } })).status).toBe(200);

  // Uploads with the upload key, in a header and in the URL.
  const form = () => {
    const f = new FormData();
    f.append('file', new Blob([Buffer.from('secret-free content')]), 'note.txt');
    return f;
  };
  const byHeader = await json(
    await fetch(`${suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: { 'x-upload-key': uploadkey }, body: form() }),
  );
  expect(byHeader.status).toBe(200);
  expect(
    (await fetch(`${suite.upload}/api/v1/assets/new/content/original/upload?uploadkey=${encodeURIComponent(uploadkey)}`, { method: 'POST', body: form() }))
      .status,
  ).toBe(200);
  const id = byHeader.body.files[0].id as string;

  // A signed link, followed; the JWT in Validate's query parameter.
  await waitFor(async () => (await json(await fetch(`${base}/api/v1/assets/${id}/data`, { headers: auth }))).body.status === 'OK', { description: 'asset OK' });
  const link = (await json(await fetch(`${base}/api/v1/assets/${id}/get_link?key=original`, { headers: auth }))).body;
  const url = new URL(link.url as string);
  const signature = url.searchParams.get('signature') as string;
  expect(signature).toBeTruthy();
  const followed = await fetch(url);
  expect(followed.status).toBe(200);
  await followed.arrayBuffer();
  expect((await fetch(`${base}/api/v1/auth/validate?_jwt=${jwt}`)).status).toBe(200);
  await waitFor(() => delivered >= 2, { timeoutMs: 30_000, description: 'webhooks delivered' });
  // The requests that carried the secrets were logged, with the values replaced, so the search below looks at real
  // lines. A line reaches this process through the child's stdout pipe a little after its response: wait for it.
  const logOf = (service: string) => suite.services[service]?.logs().join('\n') ?? '';
  // Access lines name no credential header at all (libs/http's access log keeps a few harmless headers only).
  await waitFor(() => logOf('upload').includes('uploadkey=[redacted]') && logOf('upload').includes('"url":"/api/v1/assets/new/content/original/upload"'), {
    description: "the upload requests' log lines",
  });
  await waitFor(() => logOf('link-signing').includes('signature=[redacted]'), { description: "the signed link's log line" });
  await waitFor(() => Object.keys(suite.services).some((s) => logOf(s).includes('_jwt=[redacted]')), { description: "validate's log line" });

  const secrets: Record<string, string> = {
    'the admin password': ADMIN.password,
    'a wrong password': wrongPassword,
    'the JWT': jwt,
    'the JWT signature': jwt.split('.')[2] as string,
    'the upload key': uploadkey,
    'the API key': key,
    'the webhook secret': secret,
    'the webhook secret key': secret.replace(/^whsec_/, ''),
    "a link's signature": signature,
  };
  const leaks: string[] = [];
  for (const [service, p] of Object.entries(suite.services)) {
    const text = p.logs().join('\n');
    expect(text.length).toBeGreaterThan(0);
    for (const [what, value] of Object.entries(secrets)) if (text.includes(value)) leaks.push(`${service} logged ${what}`);
  }
  expect(leaks).toEqual([]);
});
