import type { Pool, PoolClient } from '@dam/db';
import type { Collection, CollectionAssetView } from '../domain/collection';
import type { CollectionStore } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface CollectionRow {
  id: string;
  group_id: number;
  owner_id: number;
  name: string;
  shared: boolean;
  basket: boolean;
  asset_count: number;
  created_at: Date;
}

const toCollection = (r: CollectionRow): Collection => ({
  id: r.id,
  groupId: r.group_id,
  ownerId: r.owner_id,
  name: r.name,
  shared: r.shared,
  basket: r.basket,
  assetCount: Number(r.asset_count),
  createdAt: r.created_at,
});

/**
 * The collection's columns and the count of its members that are not in the trash and that its reader sees: every
 * one, or with `$creator` (the parameter's number) only those that user created (a reader of its own assets only
 * must not learn how many of the others a shared collection holds).
 */
const select = (creator: number) => `SELECT c.id, c.group_id, c.owner_id, c.name, c.shared, c.basket, c.created_at,
  (SELECT count(*) FROM collection_assets m JOIN assets a ON a.id = m.asset_id
    WHERE m.collection_id = c.id AND a.deleted_at IS NULL AND ($${creator}::int IS NULL OR a.creator_id = $${creator}))::int AS asset_count
  FROM collections c`;

/** `collections` and `collection_assets`, scoped by group. */
export class CollectionRepository implements CollectionStore {
  constructor(private readonly db: Queryable) {}

  async create(c: Pick<Collection, 'id' | 'groupId' | 'ownerId' | 'name' | 'shared'>): Promise<Collection> {
    await this.db.query('INSERT INTO collections (id, group_id, owner_id, name, shared) VALUES ($1, $2, $3, $4, $5)', [
      c.id,
      c.groupId,
      c.ownerId,
      c.name,
      c.shared,
    ]);
    return (await this.find(c.groupId, c.id)) as Collection;
  }

  async createBasket(c: Pick<Collection, 'id' | 'groupId' | 'ownerId' | 'name'>): Promise<Collection | undefined> {
    const r = await this.db.query(
      `INSERT INTO collections (id, group_id, owner_id, name, shared, basket) VALUES ($1, $2, $3, $4, false, true)
       ON CONFLICT (group_id, owner_id) WHERE basket DO NOTHING`,
      [c.id, c.groupId, c.ownerId, c.name],
    );
    return (r.rowCount ?? 0) > 0 ? this.find(c.groupId, c.id) : undefined;
  }

  async findBasket(groupId: number, ownerId: number, creatorId?: number): Promise<Collection | undefined> {
    const { rows } = await this.db.query<CollectionRow>(`${select(3)} WHERE c.group_id = $1 AND c.owner_id = $2 AND c.basket`, [
      groupId,
      ownerId,
      creatorId ?? null,
    ]);
    return rows[0] ? toCollection(rows[0]) : undefined;
  }

  async find(groupId: number, id: string, lock = false, creatorId?: number): Promise<Collection | undefined> {
    if (lock) await this.db.query('SELECT 1 FROM collections WHERE group_id = $1 AND id = $2 FOR UPDATE', [groupId, id]);
    const { rows } = await this.db.query<CollectionRow>(`${select(3)} WHERE c.group_id = $1 AND c.id = $2`, [groupId, id, creatorId ?? null]);
    return rows[0] ? toCollection(rows[0]) : undefined;
  }

  async listVisible(groupId: number, userId: number, offset: number, limit: number, creatorId?: number): Promise<{ items: Collection[]; total: number }> {
    const where = 'c.group_id = $1 AND (c.owner_id = $2 OR c.shared)';
    const [page, count] = await Promise.all([
      this.db.query<CollectionRow>(`${select(5)} WHERE ${where} ORDER BY (c.basket AND c.owner_id = $2) DESC, c.created_at, c.id OFFSET $3 LIMIT $4`, [
        groupId,
        userId,
        offset,
        limit,
        creatorId ?? null,
      ]),
      this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM collections c WHERE ${where}`, [groupId, userId]),
    ]);
    return { items: page.rows.map(toCollection), total: count.rows[0]?.n ?? 0 };
  }

  async update(groupId: number, id: string, change: { name?: string; shared?: boolean }, creatorId?: number): Promise<Collection | undefined> {
    await this.db.query('UPDATE collections SET name = coalesce($3, name), shared = coalesce($4, shared) WHERE group_id = $1 AND id = $2', [
      groupId,
      id,
      change.name ?? null,
      change.shared ?? null,
    ]);
    return this.find(groupId, id, false, creatorId);
  }

  async delete(groupId: number, id: string): Promise<void> {
    await this.db.query('DELETE FROM collections WHERE group_id = $1 AND id = $2', [groupId, id]);
  }

  async memberIds(id: string): Promise<string[]> {
    const { rows } = await this.db.query<{ asset_id: string }>('SELECT asset_id FROM collection_assets WHERE collection_id = $1', [id]);
    return rows.map((r) => r.asset_id);
  }

  async memberCount(id: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM collection_assets WHERE collection_id = $1', [id]);
    return rows[0]?.n ?? 0;
  }

  async notMembers(id: string, assetIds: string[]): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      'SELECT id FROM unnest($2::text[]) WITH ORDINALITY AS t(id, n) WHERE NOT EXISTS (SELECT 1 FROM collection_assets WHERE collection_id = $1 AND asset_id = t.id) ORDER BY t.n',
      [id, assetIds],
    );
    return rows.map((r) => r.id);
  }

  async addMembers(id: string, assetIds: string[]): Promise<void> {
    if (assetIds.length === 0) return;
    await this.db.query(
      'INSERT INTO collection_assets (collection_id, asset_id) SELECT $1, t.id FROM unnest($2::text[]) WITH ORDINALITY AS t(id, n) ORDER BY t.n ON CONFLICT DO NOTHING',
      [id, assetIds],
    );
  }

  async removeMembers(id: string, assetIds: string[]): Promise<string[]> {
    const { rows } = await this.db.query<{ asset_id: string }>(
      'DELETE FROM collection_assets WHERE collection_id = $1 AND asset_id = ANY($2) RETURNING asset_id',
      [id, assetIds],
    );
    return rows.map((r) => r.asset_id);
  }

  async lockMemberships(assetIds: string[]): Promise<void> {
    if (assetIds.length === 0) return;
    // Transaction-scoped advisory locks, one per asset, in a fixed order.
    await this.db.query(`SELECT pg_advisory_xact_lock(hashtextextended('collections:' || id, 0)) FROM unnest($1::text[]) AS t(id) ORDER BY id`, [assetIds]);
  }

  async membershipsOf(assetIds: string[]): Promise<Array<{ assetId: string; collectionIds: string[]; version: number }>> {
    const { rows } = await this.db.query<{ asset_id: string; collection_ids: string[]; version: string }>(
      `SELECT t.id AS asset_id,
         coalesce((SELECT array_agg(collection_id ORDER BY collection_id) FROM collection_assets WHERE asset_id = t.id), '{}') AS collection_ids,
         nextval('collection_membership_version') AS version
       FROM unnest($1::text[]) AS t(id) ORDER BY t.id`,
      [assetIds],
    );
    return rows.map((r) => ({ assetId: r.asset_id, collectionIds: r.collection_ids, version: Number(r.version) }));
  }

  async pageAssets(id: string, offset: number, limit: number, creatorId?: number): Promise<{ items: CollectionAssetView[]; total: number }> {
    const where = 'm.collection_id = $1 AND a.deleted_at IS NULL AND ($2::int IS NULL OR a.creator_id = $2)';
    const [page, count] = await Promise.all([
      this.db.query<{ id: string; name: string; size: string; content_type: string; status: string; upload_time: Date }>(
        `SELECT a.id, a.name, a.size, a.content_type, a.status, a.upload_time FROM collection_assets m JOIN assets a ON a.id = m.asset_id
         WHERE ${where} ORDER BY m.seq OFFSET $3 LIMIT $4`,
        [id, creatorId ?? null, offset, limit],
      ),
      this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM collection_assets m JOIN assets a ON a.id = m.asset_id WHERE ${where}`, [
        id,
        creatorId ?? null,
      ]),
    ]);
    return {
      items: page.rows.map((r) => ({
        id: r.id,
        name: r.name,
        size: Number(r.size),
        content_type: r.content_type,
        status: r.status,
        upload_time: r.upload_time.toISOString(),
      })),
      total: count.rows[0]?.n ?? 0,
    };
  }
}
