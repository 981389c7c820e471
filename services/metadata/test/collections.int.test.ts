/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { ASSET_PURGES, assetPurgeSubject, COLLECTIONS, collectionMembershipSubject } from '@dam/events';
import { waitFor } from '@dam/testing';
import { assetId, collect, principal, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 41;
const owner = principal({ group_id: GROUP, user_id: 1, role: 'USER' });
const colleague = principal({ group_id: GROUP, user_id: 2, role: 'USER' });
const manager = principal({ group_id: GROUP, user_id: 3, role: 'MANAGER' });
const stranger = principal({ group_id: GROUP + 1, user_id: 9, role: 'ADMIN' });
const BULK_GROUP = GROUP + 2;
const bulk = principal({ group_id: BULK_GROUP, user_id: 1, role: 'USER' });

async function call(method: string, path: string, body?: unknown, p = owner): Promise<{ status: number; body: any }> {
  const res = await signedFetch(`${h.url}${path}`, p, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

/** `n` assets of a group, straight into the table (their records are all a collection needs). */
async function assets(n: number, group = GROUP, creator = 1): Promise<string[]> {
  const ids = Array.from({ length: n }, () => assetId());
  await h.pool.query(
    `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, object_key)
     SELECT id, $1, $2, 'a-' || id || '.txt', 3, 'c', 'text/plain', 'OK', 'k' FROM unnest($3::text[]) AS t(id)`,
    [group, creator, ids],
  );
  return ids;
}

describe('collections (CONTRACT §9)', () => {
  it('creates, lists (SELECTED_ASSETS first, made on first use), pages its assets, renames and deletes', async () => {
    const created = await call('POST', '/api/v1/collections', { name: 'Launch', shared: false });
    expect(created).toEqual({
      status: 201,
      body: {
        collection_id: expect.stringMatching(/^[0-9a-f]{32}$/),
        name: 'Launch',
        shared: false,
        owner_id: 1,
        asset_count: 0,
        created_at: expect.any(String),
      },
    });
    const id = created.body.collection_id;
    const list = await call('GET', '/api/v1/collections');
    expect(list.body).toMatchObject({ page: 1, page_size: 25, total: 2 });
    expect(list.body.items.map((c: any) => c.name)).toEqual(['SELECTED_ASSETS', 'Launch']);

    const ids = await assets(3);
    expect(await call('POST', `/api/v1/collections/${id}/assets`, { ids: [...ids, ids[0]] })).toMatchObject({ status: 200, body: { asset_count: 3 } });
    const page = await call('GET', `/api/v1/collections/${id}?page=2&page_size=2`);
    expect(page.body).toMatchObject({ collection_id: id, name: 'Launch', asset_count: 3, page: 2, page_size: 2, total: 3 });
    expect(page.body.items).toEqual([
      { id: ids[2], name: `a-${ids[2]}.txt`, size: 3, content_type: 'text/plain', status: 'OK', upload_time: expect.any(String) },
    ]);
    expect((await call('DELETE', `/api/v1/collections/${id}/assets`, { ids: [ids[0], assetId()] })).body.asset_count).toBe(2);

    expect(await call('PATCH', `/api/v1/collections/${id}`, { name: 'Launch 2027', shared: true })).toMatchObject({
      status: 200,
      body: { name: 'Launch 2027', shared: true },
    });
    for (const bad of [{}, { name: '' }, { shared: 'yes' }, { owner_id: 2 }]) expect((await call('PATCH', `/api/v1/collections/${id}`, bad)).status).toBe(400);
    expect(await call('DELETE', `/api/v1/collections/${id}`)).toEqual({ status: 200, body: { collection_id: id, deleted: true } });
    expect((await call('GET', `/api/v1/collections/${id}`)).status).toBe(404);
  });

  it('keeps SELECTED_ASSETS as it is: no rename, no sharing, no deletion (400), and its name is reserved', async () => {
    const basket = (await call('GET', '/api/v1/collections')).body.items[0];
    expect(basket).toMatchObject({ name: 'SELECTED_ASSETS', shared: false, owner_id: 1 });
    for (const change of [{ name: 'Mine' }, { shared: true }])
      expect((await call('PATCH', `/api/v1/collections/${basket.collection_id}`, change)).status).toBe(400);
    expect((await call('DELETE', `/api/v1/collections/${basket.collection_id}`)).status).toBe(400);
    expect((await call('POST', '/api/v1/collections', { name: 'SELECTED_ASSETS' })).status).toBe(400);
    // Its name works as its id, for the caller's own basket; every user has one of their own.
    const [a] = await assets(1);
    expect((await call('POST', '/api/v1/collections/SELECTED_ASSETS/assets', { ids: [a] })).body).toMatchObject({
      collection_id: basket.collection_id,
      asset_count: 1,
    });
    expect((await call('GET', '/api/v1/collections/SELECTED_ASSETS', undefined, colleague)).body).toMatchObject({ owner_id: 2, asset_count: 0 });
  });

  it('shows a private collection to its owner only and a shared one to the group; only owner or manager change it', async () => {
    const priv = (await call('POST', '/api/v1/collections', { name: 'private' })).body.collection_id;
    const shared = (await call('POST', '/api/v1/collections', { name: 'team', shared: true })).body.collection_id;
    expect((await call('GET', `/api/v1/collections/${priv}`, undefined, colleague)).status).toBe(404);
    expect((await call('POST', `/api/v1/collections/${priv}/assets`, { ids: await assets(1) }, colleague)).status).toBe(404);
    expect((await call('GET', `/api/v1/collections/${shared}`, undefined, colleague)).status).toBe(200);
    expect((await call('GET', '/api/v1/collections', undefined, colleague)).body.items.map((c: any) => c.name)).toEqual(['SELECTED_ASSETS', 'team']);
    // A colleague adds to a shared collection, but renames or deletes it only as a manager.
    expect((await call('POST', `/api/v1/collections/${shared}/assets`, { ids: await assets(1) }, colleague)).status).toBe(200);
    expect((await call('PATCH', `/api/v1/collections/${shared}`, { name: 'mine now' }, colleague)).status).toBe(403);
    expect((await call('PATCH', `/api/v1/collections/${shared}`, { name: 'renamed by manager' }, manager)).status).toBe(200);
    // Another group sees neither, and cannot add its assets to ours.
    expect((await call('GET', `/api/v1/collections/${shared}`, undefined, stranger)).status).toBe(404);
    const theirs = await assets(1, GROUP + 1, 9);
    const refused = await call('POST', `/api/v1/collections/${shared}/assets`, { ids: theirs });
    expect(refused).toMatchObject({ status: 404, body: { error: { code: 'ASSET_NOT_FOUND' } } });
    expect((await call('GET', `/api/v1/collections/${shared}`)).body.asset_count).toBe(1);
  });

  it("counts for a CREATOR only the assets it may see (security review I5): a shared collection of others' assets is empty to it", async () => {
    const creator = principal({ group_id: GROUP, user_id: 5, role: 'CREATOR' });
    const shared = (await call('POST', '/api/v1/collections', { name: 'shared with a creator', shared: true })).body.collection_id;
    const [mine] = await assets(1, GROUP, 5);
    expect((await call('POST', `/api/v1/collections/${shared}/assets`, { ids: [...(await assets(2)), mine] })).body.asset_count).toBe(3);
    // Before: asset_count 3 with one item, the two hidden ones counted.
    expect((await call('GET', `/api/v1/collections/${shared}`, undefined, creator)).body).toMatchObject({ asset_count: 1, total: 1, items: [{ id: mine }] });
    const listed = (await call('GET', '/api/v1/collections?page_size=100', undefined, creator)).body.items.find((c: any) => c.collection_id === shared);
    expect(listed).toMatchObject({ asset_count: 1 });
    // A CREATOR changes no collection (no MANAGE_COLLECTIONS: refused here as at the gateway, security review F3).
    expect((await call('DELETE', `/api/v1/collections/${shared}/assets`, { ids: [assetId()] }, creator)).status).toBe(403);
    // Readers of every asset still count them all.
    expect((await call('GET', `/api/v1/collections/${shared}`, undefined, colleague)).body).toMatchObject({ asset_count: 3, total: 3 });
  });

  it("answers a collection id of no collection's form with 404 on every route (CONTRACT §16: 400 before)", async () => {
    const [a] = await assets(1);
    for (const bad of ['x'.repeat(65), `${'a'.repeat(64)}b`]) {
      for (const [method, path, body] of [
        ['GET', `/api/v1/collections/${bad}`, undefined],
        ['PATCH', `/api/v1/collections/${bad}`, { name: 'n' }],
        ['DELETE', `/api/v1/collections/${bad}`, undefined],
        ['POST', `/api/v1/collections/${bad}/assets`, { ids: [a] }],
        ['DELETE', `/api/v1/collections/${bad}/assets`, { ids: [a] }],
      ] as const) {
        const res = await call(method, path, body);
        expect({ method, path: path.slice(0, 30), status: res.status, code: res.body.error?.code }).toEqual({
          method,
          path: path.slice(0, 30),
          status: 404,
          code: 'COLLECTION_NOT_FOUND',
        });
      }
    }
  });

  it('leaves trashed assets out of its pages and brings them back with undelete', async () => {
    const id = (await call('POST', '/api/v1/collections', { name: 'trash test' })).body.collection_id;
    const [a, b] = await assets(2);
    await call('POST', `/api/v1/collections/${id}/assets`, { ids: [a, b] });
    await h.pool.query('UPDATE assets SET deleted_at = now() WHERE id = $1', [a]);
    expect((await call('GET', `/api/v1/collections/${id}`)).body).toMatchObject({ asset_count: 1, total: 1, items: [{ id: b }] });
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [a] })).status).toBe(404);
    await h.pool.query('UPDATE assets SET deleted_at = NULL WHERE id = $1', [a]);
    expect((await call('GET', `/api/v1/collections/${id}`)).body).toMatchObject({ asset_count: 2, total: 2 });
  });

  it("tells search each asset's collections, whole and versioned, after every change", async () => {
    const seen = await collect(h.nc, COLLECTIONS, `dam.collections.${GROUP}.>`);
    try {
      const one = (await call('POST', '/api/v1/collections', { name: 'one', shared: true })).body.collection_id;
      const two = (await call('POST', '/api/v1/collections', { name: 'two' })).body.collection_id;
      const [a] = await assets(1);
      // Each change answered (a failed one would publish nothing, and the wait below would only say so later).
      expect((await call('POST', `/api/v1/collections/${one}/assets`, { ids: [a] })).status).toBe(200);
      expect((await call('POST', `/api/v1/collections/${two}/assets`, { ids: [a] })).status).toBe(200);
      expect((await call('DELETE', `/api/v1/collections/${one}`)).status).toBe(200);
      const of = () => seen.messages.filter((m) => m.subject === collectionMembershipSubject(GROUP, a!)).map((m) => m.payload);
      // Through the outbox relay and JetStream to a pull consumer: seconds at most, but the whole suite shares two
      // cores (a run in CI once took over 10 s).
      const statesOf = () => seen.messages.filter((m) => m.subject === `dam.collections.${GROUP}.collection.${one}`).map((m) => m.payload);
      // The delete's two messages (the membership and the collection's last state) may come in either order: both.
      await waitFor(async () => of().length === 3 && statesOf().length === 2, {
        timeoutMs: 30_000,
        description: 'three membership messages and two states of the deleted collection',
      });
      expect(of().map((m: any) => m.collection_ids)).toEqual([[one], [one, two].sort(), [two]]);
      const versions = of().map((m: any) => m.version);
      expect([...versions].sort((x, y) => x - y)).toEqual(versions);
      const states = statesOf();
      expect(states).toEqual([
        { id: expect.any(String), group_id: GROUP, collection_id: one, owner_id: 1, shared: true, deleted: false },
        { id: expect.any(String), group_id: GROUP, collection_id: one, owner_id: 1, shared: true, deleted: true },
      ]);
    } finally {
      await seen.stop();
    }
  });

  it('loses a purged asset, and tells search it is in no collection and purged', async () => {
    const admin = principal({ group_id: GROUP, user_id: 1, role: 'ADMIN' });
    const seen = await collect(h.nc, COLLECTIONS, `dam.collections.${GROUP}.asset.>`);
    const purges = await collect(h.nc, ASSET_PURGES, assetPurgeSubject(GROUP));
    try {
      const id = (await call('POST', '/api/v1/collections', { name: 'purge test' })).body.collection_id;
      const [a, b] = await assets(2);
      await call('POST', `/api/v1/collections/${id}/assets`, { ids: [a, b] });
      await h.pool.query("UPDATE assets SET deleted_at = now() - interval '1 minute' WHERE id = $1", [a]);
      const purge = await call('DELETE', '/api/v1/assets/trash/purge', undefined, admin);
      expect(purge.status).toBe(202);
      await waitFor(async () => (await call('GET', `/api/v1/jobs/${purge.body.job_id}`, undefined, admin)).body.status === 'COMPLETED', {
        description: 'purge done',
      });
      expect((await call('GET', `/api/v1/collections/${id}`)).body).toMatchObject({ asset_count: 1, items: [{ id: b }] });
      await waitFor(async () => seen.messages.some((m) => m.payload.asset_id === a && m.payload.collection_ids.length === 0), {
        description: 'the empty list',
      });
      await waitFor(async () => purges.messages.length === 1, { description: 'the purge message' });
      expect((await h.pool.query('SELECT 1 FROM assets WHERE id = $1', [a])).rowCount).toBe(0);
      expect(purges.messages[0]?.payload).toEqual({ id: expect.any(String), group_id: GROUP, assets: [{ id: a, version: expect.any(Number) }] });
      expect(purges.messages[0]?.payload.assets[0].version).toBeGreaterThan(1);
    } finally {
      await seen.stop();
      await purges.stop();
    }
  });

  // Last: each of these adds hundreds of members, whose messages the outbox relay then publishes for a while; a test
  // after them waiting for its own few messages would wait behind them all on a busy machine.
  it('holds at most 300 assets: more answers 409 and adds nothing', async () => {
    const id = (await call('POST', '/api/v1/collections', { name: 'big' })).body.collection_id;
    const first = await assets(299);
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: first })).body.asset_count).toBe(299);
    const more = await assets(2);
    expect(await call('POST', `/api/v1/collections/${id}/assets`, { ids: more })).toMatchObject({ status: 409, body: { error: { code: 'COLLECTION_FULL' } } });
    expect((await call('GET', `/api/v1/collections/${id}`)).body.asset_count).toBe(299);
    // Ids already in it do not count twice.
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [...first.slice(0, 5), more[0]] })).body.asset_count).toBe(300);
  });

  // In a group of their own: their ~1,000 membership messages are not replayed to the other tests' collectors of GROUP.
  it('answers 409 and adds nothing when one call would pass 300, however many it brings (CONTRACT §16: 400 before)', async () => {
    const id = (await call('POST', '/api/v1/collections', { name: 'one call' }, bulk)).body.collection_id;
    const many = await assets(301, BULK_GROUP);
    for (const ids of [many, [...many, ...many]]) {
      expect(await call('POST', `/api/v1/collections/${id}/assets`, { ids }, bulk)).toMatchObject({
        status: 409,
        body: { error: { code: 'COLLECTION_FULL' } },
      });
    }
    // More than 300 ids that are not even assets: still the limit's 409 (nothing of them could fit).
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: Array.from({ length: 400 }, () => assetId()) }, bulk)).status).toBe(409);
    expect((await call('GET', `/api/v1/collections/${id}`, undefined, bulk)).body.asset_count).toBe(0);
    // 301 entries that are 300 distinct assets fit exactly; a list longer than 300 removes what is in it.
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [...many.slice(0, 300), many[0]] }, bulk)).body.asset_count).toBe(300);
    expect((await call('DELETE', `/api/v1/collections/${id}/assets`, { ids: [...many, assetId()] }, bulk)).body.asset_count).toBe(0);
  });

  it('never passes 300 under concurrent adds: the collection row lock counts them one after the other', async () => {
    const id = (await call('POST', '/api/v1/collections', { name: 'raced' }, bulk)).body.collection_id;
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: await assets(280, BULK_GROUP) }, bulk)).body.asset_count).toBe(280);
    const batches = await Promise.all(Array.from({ length: 6 }, () => assets(10, BULK_GROUP)));
    const answers = await Promise.all(batches.map((ids) => call('POST', `/api/v1/collections/${id}/assets`, { ids }, bulk)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 409, 409, 409, 409]);
    expect((await call('GET', `/api/v1/collections/${id}`, undefined, bulk)).body.asset_count).toBe(300);
    const { rows } = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM collection_assets WHERE collection_id = $1', [id]);
    expect(rows[0]?.n).toBe(300);
  });
});
