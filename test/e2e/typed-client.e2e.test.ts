import sharp from 'sharp';
import { createDamClient } from '@dam/client';
import { waitFor } from '@dam/testing';
import { ADMIN, useSuite } from './suite';

/** libs/client (generated from docs/openapi.yaml) against the suite: the document is what the services answer. */
const e2e = useSuite();

it('logs in, uploads through {upload}, reads the asset and makes a collection with typed calls', async () => {
  const anonymous = createDamClient({ baseUrl: e2e.suite.base });
  const login = await anonymous.POST('/api/v1/login', { body: { email: ADMIN.email, password: ADMIN.password } });
  expect(login.response.status).toBe(200);
  const token = login.data?.jwt as string;
  const dam = createDamClient({ baseUrl: e2e.suite.base, token });

  const me = await dam.GET('/api/v1/users/me');
  expect(me.data).toMatchObject({ email: ADMIN.email });

  // Uploads are multipart: the typed client serialises the form as given.
  const form = new FormData();
  form.append(
    'file',
    new Blob([
      await sharp({ create: { width: 40, height: 30, channels: 3, background: '#a40' } })
        .png()
        .toBuffer(),
    ]),
    'typed.png',
  );
  const uploads = createDamClient({ baseUrl: e2e.suite.upload, token });
  const uploaded = await uploads.POST('/api/v1/assets/new/content/original/upload', { body: form as never, bodySerializer: (b) => b as FormData });
  expect(uploaded.response.status).toBe(200);
  const id = uploaded.data?.files[0]?.id as string;

  const data = await waitFor(
    async () => {
      const r = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } });
      return r.data?.status === 'OK' ? r.data : undefined;
    },
    { description: 'the asset OK' },
  );
  expect(data).toMatchObject({ id, name: 'typed.png', content_type: 'image/png' });

  const keyed = createDamClient({ baseUrl: e2e.suite.base, token, idempotencyKey: () => 'typed-client-collection' });
  const made = await keyed.POST('/api/v1/collections', { body: { name: 'Typed' } });
  expect(made.response.status).toBe(201);
  const again = await keyed.POST('/api/v1/collections', { body: { name: 'Typed' } });
  expect(again.response.headers.get('idempotent-replayed')).toBe('true');
  // An error comes back typed as the contract's body.
  const missing = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: '0'.repeat(32) } } });
  expect(missing.response.status).toBe(404);
  expect(missing.error).toMatchObject({ error: { code: 'ASSET_NOT_FOUND' } });
});
