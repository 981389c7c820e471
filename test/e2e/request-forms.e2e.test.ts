/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { useSuite } from './suite';

/**
 * CONTRACT §16, its third rule, through the gateway: an unknown id of any form answers 404; adding past a
 * collection's 300 answers 409 however many come in one call; a JSON body that is not valid UTF-8 answers 400 and
 * stores nothing. No conversion or addon worker is needed for any of it.
 */
const e2e = useSuite({}, { services: ['gateway', 'upload', 'metadata', 'auth', 'search', 'link-signing'] });
const { call, upload } = e2e.api;

/** A JSON request whose body is these exact bytes. */
async function rawJson(method: string, path: string, body: Buffer): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${path}`, { method, headers: { authorization: `Bearer ${e2e.jwt}`, 'content-type': 'application/json' }, body });
  return { status: res.status, body: await res.json() };
}

/** `text` as UTF-8 with the byte 0xFF (never valid in UTF-8) where `\uFFFF` stands. */
const withBadByte = (text: string): Buffer =>
  Buffer.concat(text.split('\uFFFF').flatMap((part, i) => (i === 0 ? [Buffer.from(part)] : [Buffer.from([0xff]), Buffer.from(part)])));

describe('request forms (CONTRACT §16)', () => {
  let asset: string;
  beforeAll(async () => {
    asset = await upload(Buffer.from('forms'), 'forms.txt');
  });

  it("answers an id of no resource's form with that resource's 404 on every route that names one (400 before)", async () => {
    const long = 'x'.repeat(65);
    const cases: Array<[string, string, unknown, string]> = [
      ['GET', '/api/v1/assets/search/not-a-result-id/1', undefined, 'SEARCH_RESULT_NOT_FOUND'],
      ['GET', '/api/v1/search/not-a-result-id/1', undefined, 'SEARCH_RESULT_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/data`, undefined, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/similar`, undefined, 'ASSET_NOT_FOUND'],
      ['POST', `/api/v1/assets/${long}/data/update`, { data: {}, mode: 'APPEND' }, 'ASSET_NOT_FOUND'],
      ['POST', `/api/v1/assets/${long}/delete`, { keys: ['original'] }, 'ASSET_NOT_FOUND'],
      ['POST', `/api/v1/assets/trash/${long}/undelete`, { keys: ['original'] }, 'ASSET_NOT_FOUND'],
      ['POST', `/api/v1/assets/${long}/process`, { keys: ['thumb'] }, 'ASSET_NOT_FOUND'],
      ['POST', `/api/v1/assets/${long}/content/set_public_access`, { keys: ['original'], public: true }, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/addons/auto_tagging`, undefined, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/conversions/thumb`, undefined, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/content/original/download`, undefined, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${long}/get_link`, undefined, 'ASSET_NOT_FOUND'],
      ['GET', `/api/v1/assets/${asset}/conversions/${long}`, undefined, 'CONVERSION_NOT_FOUND'],
      ['DELETE', `/api/v1/assets/${asset}/content/${'n'.repeat(257)}`, undefined, 'CONVERSION_NOT_FOUND'],
      ['GET', `/api/v1/collections/${long}`, undefined, 'COLLECTION_NOT_FOUND'],
      ['POST', `/api/v1/collections/${long}/assets`, { ids: [asset] }, 'COLLECTION_NOT_FOUND'],
      ['GET', '/api/v1/jobs/not-a-job', undefined, 'JOB_NOT_FOUND'],
      ['GET', '/api/v1/schemas/not-a-schema', undefined, 'SCHEMA_NOT_FOUND'],
      ['GET', '/api/v1/users/not-a-user', undefined, 'USER_NOT_FOUND'],
      ['PATCH', '/api/v1/users/0', { disabled: true }, 'USER_NOT_FOUND'],
      ['DELETE', `/api/v1/api_keys/${'k'.repeat(101)}`, undefined, 'API_KEY_NOT_FOUND'],
      ['GET', `/api/v1/usage/${long}`, undefined, 'METRIC_NOT_FOUND'],
      // Not even decodable (invalid UTF-8 percent-encoded): no name has that form.
      ['GET', '/api/v1/assets/%FF%FE/data', undefined, 'NOT_FOUND'],
      ['GET', '/api/v1/assets/search/%C3/1', undefined, 'NOT_FOUND'],
    ];
    const answers = [];
    for (const [method, path, body] of cases) {
      const res = await call(method, path, body);
      answers.push({ method, path, status: res.status, code: res.body?.error?.code });
      expect(res.body?.error?.message).toEqual(expect.any(String));
    }
    expect(answers).toEqual(cases.map(([method, path, , code]) => ({ method, path, status: 404, code })));
  });

  it('answers 409 when one call would take a collection past 300, and adds nothing (400 before)', async () => {
    const made = await call('POST', '/api/v1/collections', { name: 'three hundred and one' });
    expect(made.status).toBe(201);
    const id = made.body.collection_id as string;
    const ids = [asset, ...Array.from({ length: 300 }, (_, i) => `a${String(i).padStart(31, '0')}`)];
    const full = await call('POST', `/api/v1/collections/${id}/assets`, { ids });
    expect(full).toMatchObject({ status: 409, body: { error: { code: 'COLLECTION_FULL', message: expect.any(String) } } });
    expect((await call('GET', `/api/v1/collections/${id}`)).body).toMatchObject({ asset_count: 0, total: 0 });
    // The same asset within the limit is taken.
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [asset] })).body.asset_count).toBe(1);
  });

  it('answers 400 VALIDATION_FAILED for a JSON body that is not valid UTF-8, and stores nothing (U+FFFD stored before)', async () => {
    const created = await rawJson('POST', '/api/v1/collections', withBadByte('{"name":"caf\uFFFF"}'));
    expect(created).toEqual({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED', message: expect.any(String), details: [{ path: '(body)', message: 'must be valid UTF-8' }] } },
    });
    const names = (await call('GET', '/api/v1/collections?page_size=100')).body.items.map((c: any) => c.name);
    expect(names.filter((n: string) => n.startsWith('caf'))).toEqual([]);

    const updated = await rawJson('POST', `/api/v1/assets/${asset}/data/update`, withBadByte('{"data":{"title":"bad \uFFFF byte"},"mode":"APPEND"}'));
    expect(updated.status).toBe(400);
    expect(updated.body.error.code).toBe('VALIDATION_FAILED');
    expect((await call('GET', `/api/v1/assets/${asset}/data`)).body.data?.title).toBeUndefined();
    // The same body in valid UTF-8 is stored as sent.
    const good = await rawJson('POST', `/api/v1/assets/${asset}/data/update`, Buffer.from('{"data":{"title":"café"},"mode":"APPEND"}'));
    expect(good.status).toBe(200);
    expect((await call('GET', `/api/v1/assets/${asset}/data`)).body.data?.title).toBe('café');
  });
});
