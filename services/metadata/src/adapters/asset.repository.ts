import type { Pool, PoolClient } from '@dam/db';
import type { AssetStatus } from '@dam/events';
import { claimMessage } from '@dam/outbox';
import type { Asset, NewAsset, StoredConversion } from '../domain/asset';
import { similarLookup } from '../domain/near-duplicates';
import type { AssetReader, AssetStore, NewOriginal } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface AssetRow {
  id: string;
  group_id: number;
  creator_id: number;
  name: string;
  size: string;
  checksum: string;
  content_type: string;
  status: AssetStatus;
  metadata: Record<string, unknown>;
  data: Record<string, unknown>;
  data_schema_id: number;
  conversions: Record<string, StoredConversion>;
  addons_info: Record<string, { available: boolean }>;
  errors: Record<string, string> | null;
  object_key: string;
  upload_time: Date;
  update_time: Date;
  deleted_at: Date | null;
  version: string;
  public_urls: Record<string, string>;
  addon_results: Record<string, Record<string, unknown>>;
}

/** addons_info entries that say a conversion exists: the trash removes conversions, so these go with them. */
const CONVERSION_ADDON_INFO = `'{ON_DEMAND_IMAGE,background_removal,storyboard}'::text[]`;

const COLUMNS = `id, group_id, creator_id, name, size, checksum, content_type, status, metadata, data, data_schema_id,
  conversions, addons_info, addon_results, errors, object_key, upload_time, update_time, deleted_at, version, public_urls`;

function toAsset(row: AssetRow): Asset {
  return {
    id: row.id,
    groupId: row.group_id,
    creatorId: row.creator_id,
    name: row.name,
    // bigint arrives as a string; sizes stay well inside Number's safe range (< 8 PiB).
    size: Number(row.size),
    checksum: row.checksum,
    contentType: row.content_type,
    status: row.status,
    metadata: row.metadata,
    data: row.data,
    dataSchemaId: row.data_schema_id,
    conversions: row.conversions,
    addonsInfo: row.addons_info,
    addonResults: row.addon_results,
    errors: row.errors,
    objectKey: row.object_key,
    uploadTime: row.upload_time,
    updateTime: row.update_time,
    deletedAt: row.deleted_at,
    // bigint arrives as a string; a row changes far fewer than 2^53 times.
    version: Number(row.version),
    publicUrls: row.public_urls,
  };
}

/**
 * Near-duplicates: candidates from the four band indexes (multi-index hashing, domain/near-duplicates), then the
 * exact Hamming distance, bit_count of the XOR. A distance too wide for the bands reads the group's hashed assets.
 */
export function similarQuery(
  groupId: number,
  exceptId: string,
  phash: string,
  maxDistance: number,
  limit: number,
  creatorId?: number,
): { text: string; values: unknown[] } {
  const { hash, bands } = similarLookup(phash, maxDistance);
  const byBand = bands ? 'AND (phash_b0 = ANY($7) OR phash_b1 = ANY($8) OR phash_b2 = ANY($9) OR phash_b3 = ANY($10))' : '';
  return {
    text: `SELECT id, distance FROM (
       SELECT id, bit_count((phash # $3::bigint)::bit(64))::int AS distance
       FROM assets
       WHERE group_id = $1 AND id <> $2 AND deleted_at IS NULL AND phash IS NOT NULL
         AND ($6::int IS NULL OR creator_id = $6) ${byBand}
     ) d WHERE distance <= $4 ORDER BY distance, id LIMIT $5`,
    values: [groupId, exceptId, hash, maxDistance, limit, creatorId ?? null, ...(bands ?? [])],
  };
}

/** PostgreSQL `assets`; group_id is part of every statement, so one tenant never reads or writes another's rows. */
export class AssetRepository implements AssetStore, AssetReader {
  constructor(private readonly db: Queryable) {}

  async insert(a: NewAsset): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, metadata, data,
         data_schema_id, object_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       RETURNING ${COLUMNS}`,
      [a.id, a.groupId, a.creatorId, a.name, a.size, a.checksum, a.contentType, a.status, a.metadata, a.data, a.dataSchemaId, a.objectKey],
    );
    return toAsset(rows[0] as AssetRow);
  }

  async findById(groupId: number, id: string): Promise<Asset | undefined> {
    const { rows } = await this.db.query<AssetRow>(`SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND id = $2`, [groupId, id]);
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async findManyById(groupId: number, ids: readonly string[]): Promise<Asset[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.db.query<AssetRow>(`SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND id = ANY($2::text[])`, [groupId, [...ids]]);
    return rows.map(toAsset);
  }

  async similar(
    groupId: number,
    exceptId: string,
    phash: string,
    maxDistance: number,
    limit: number,
    creatorId?: number,
  ): Promise<Array<{ id: string; distance: number }>> {
    const { rows } = await this.db.query<{ id: string; distance: number }>(similarQuery(groupId, exceptId, phash, maxDistance, limit, creatorId));
    return rows;
  }

  async saveAddonResult(groupId: number, id: string, addon: string, results: Record<string, Record<string, unknown>>): Promise<Asset | undefined> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET addon_results = addon_results || $4::jsonb,
         addons_info = addons_info || jsonb_build_object($3::text, jsonb_build_object('available', true)),
         update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, addon, JSON.stringify(results)],
    );
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async removeAddonResults(groupId: number, id: string, addons: readonly string[], results: Record<string, Record<string, unknown>>): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET addon_results = $4::jsonb, addons_info = addons_info - $3::text[], update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, addons, JSON.stringify(results)],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its addon results were deleted`);
    return toAsset(rows[0]);
  }

  async findMany(groupId: number, ids: string[]): Promise<Map<string, Asset>> {
    const { rows } = await this.db.query<AssetRow>(`SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND id = ANY($2)`, [groupId, ids]);
    return new Map(rows.map((r) => [r.id, toAsset(r)]));
  }

  async findForUpdate(groupId: number, id: string): Promise<Asset | undefined> {
    const { rows } = await this.db.query<AssetRow>(`SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND id = $2 FOR UPDATE`, [groupId, id]);
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async saveConversions(
    groupId: number,
    id: string,
    conversions: Record<string, StoredConversion>,
    metadata: Record<string, unknown>,
    addonsInfo?: Record<string, { available: boolean }>,
  ): Promise<void> {
    await this.db.query(
      `UPDATE assets SET conversions = $3, metadata = $4, addons_info = coalesce($5, addons_info), update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2`,
      [groupId, id, conversions, metadata, addonsInfo ?? null],
    );
  }

  async noteFailure(groupId: number, id: string, errors: Record<string, string>): Promise<void> {
    await this.db.query(`UPDATE assets SET errors = coalesce(errors, '{}'::jsonb) || $3::jsonb WHERE group_id = $1 AND id = $2 AND status = 'NOT_READY'`, [
      groupId,
      id,
      JSON.stringify(errors),
    ]);
  }

  async settle(groupId: number, id: string): Promise<Asset | undefined> {
    // The jobs of a round: its processing (or ingest) job and its automatic addons (CONTRACT §16). CDN and reissue
    // jobs never hold an asset; an addon run on request needs an OK asset, so it is never open in a round.
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET status = CASE WHEN errors IS NULL OR errors = '{}'::jsonb THEN 'OK' ELSE 'ERROR' END,
         update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 AND status = 'NOT_READY'
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.group_id = $1 AND $2 = ANY(j.asset_ids)
           AND j.type IN ('processing', 'ingest', 'addon') AND j.status IN ('QUEUED', 'IN_PROGRESS'))
       RETURNING ${COLUMNS}`,
      [groupId, id],
    );
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async markAddonsUnavailable(groupId: number, id: string, addons: readonly string[]): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET addons_info = addons_info || (SELECT jsonb_object_agg(a, jsonb_build_object('available', false)) FROM unnest($3::text[]) a),
         update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, addons],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its addons were marked unavailable`);
    return toAsset(rows[0]);
  }

  async setConversions(groupId: number, id: string, conversions: Record<string, StoredConversion>): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET conversions = $3, update_time = now(), version = version + 1 WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, conversions],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its conversions changed`);
    return toAsset(rows[0]);
  }

  async replaceOriginal(groupId: number, id: string, o: NewOriginal): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET name = $3, size = $4, checksum = $5, content_type = $6, object_key = $7, metadata = $8, data = $9,
         data_schema_id = $10, conversions = '{}'::jsonb, public_urls = '{}'::jsonb, addon_results = '{}'::jsonb, addons_info = '{}'::jsonb, errors = NULL, status = 'NOT_READY', update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, o.name, o.size, o.checksum, o.contentType, o.objectKey, o.metadata, o.data, o.dataSchemaId],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its original was replaced`);
    return toAsset(rows[0]);
  }

  async setData(groupId: number, id: string, data: Record<string, unknown>, dataSchemaId: number): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET data = $3, data_schema_id = $4, update_time = now(), version = version + 1 WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, data, dataSchemaId],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its data changed`);
    return toAsset(rows[0]);
  }

  async findForUpdateNoWait(groupId: number, id: string): Promise<Asset | undefined | 'busy'> {
    // In a savepoint: a refused lock (55P03) must not abort the caller's transaction.
    await this.db.query('SAVEPOINT nowait_lock');
    try {
      const { rows } = await this.db.query<AssetRow>(`SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND id = $2 FOR UPDATE NOWAIT`, [groupId, id]);
      await this.db.query('RELEASE SAVEPOINT nowait_lock');
      return rows[0] ? toAsset(rows[0]) : undefined;
    } catch (error) {
      await this.db.query('ROLLBACK TO SAVEPOINT nowait_lock');
      if ((error as { code?: string }).code === '55P03') return 'busy';
      throw error;
    }
  }

  async setPublicUrls(groupId: number, id: string, publicUrls: Record<string, string>): Promise<Asset> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET public_urls = $3, update_time = now(), version = version + 1 WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, publicUrls],
    );
    if (!rows[0]) throw new Error(`asset ${id} vanished while its public keys changed`);
    return toAsset(rows[0]);
  }

  async moveToTrash(groupId: number, id: string): Promise<Asset | undefined> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET deleted_at = now(), conversions = '{}'::jsonb, public_urls = '{}'::jsonb,
         addons_info = addons_info - ${CONVERSION_ADDON_INFO}, update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
      [groupId, id],
    );
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async restore(groupId: number, id: string): Promise<Asset | undefined> {
    const { rows } = await this.db.query<AssetRow>(
      `UPDATE assets SET deleted_at = NULL, update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 AND deleted_at IS NOT NULL RETURNING ${COLUMNS}`,
      [groupId, id],
    );
    return rows[0] ? toAsset(rows[0]) : undefined;
  }

  async remove(groupId: number, id: string): Promise<void> {
    await this.db.query(`DELETE FROM assets WHERE group_id = $1 AND id = $2`, [groupId, id]);
  }

  async lockTrashed(groupId: number, before: Date, limit: number): Promise<Asset[]> {
    const { rows } = await this.db.query<AssetRow>(
      `SELECT ${COLUMNS} FROM assets WHERE group_id = $1 AND deleted_at IS NOT NULL AND deleted_at <= $2
       ORDER BY deleted_at LIMIT $3 FOR UPDATE SKIP LOCKED`,
      [groupId, before, limit],
    );
    return rows.map(toAsset);
  }

  async uploadedBetween(groupId: number, from: Date, to: Date, limit: number, creatorId?: number): Promise<{ ids: string[]; total: number }> {
    const { rows } = await this.db.query<{ id: string; total: number }>(
      `SELECT id, count(*) OVER ()::int AS total FROM assets
       WHERE group_id = $1 AND deleted_at IS NULL AND upload_time >= $2 AND upload_time <= $3 AND ($5::int IS NULL OR creator_id = $5)
       ORDER BY upload_time, id LIMIT $4`,
      [groupId, from, to, limit, creatorId ?? null],
    );
    return { ids: rows.map((r) => r.id), total: rows[0]?.total ?? 0 };
  }
}

export class ProcessedMessagesRepository {
  constructor(private readonly db: Queryable) {}

  claim(messageId: string): Promise<boolean> {
    return claimMessage(this.db, messageId);
  }
}
