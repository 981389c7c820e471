import type { AssetData } from '@dam/events';
import { withTransaction, type Pool } from '@dam/db';
import type { AddonTerms, CollectionState, RebuildableReadModel } from '../domain/ports';

/** The text a keyword query matches: the name (split at punctuation, so `IMG_2041.jpg` finds `img` and `2041`). */
const nameWords = (name: string): string => `${name} ${name.replace(/[^\p{L}\p{N}]+/gu, ' ')}`;

/**
 * Writes of the read model. Every write carries the event's asset version and changes the row only when that
 * version is newer than the row's: events may arrive twice or out of order, the row ends the same. The asset as
 * events carry it (`version`) and its place in or out of the trash (`trash_version`) are versioned apart, so a
 * deletion that overtakes the asset's earlier events does not keep them out; a purge's tombstone sets both.
 */
export class SearchIndexRepository implements RebuildableReadModel {
  constructor(private readonly pool: Pool) {}

  /**
   * file-saved, file-processed, file-data-updated, addon-processed: the asset as the event carries it, with its
   * schema's searchable fields as far as the schema is known yet (`saveSchema` re-indexes when it arrives later).
   */
  async upsertAsset(groupId: number, version: number, a: AssetData, dataSchemaId = 0, terms: AddonTerms = { labels: [], words: [] }): Promise<boolean> {
    // The row (without its doc: search_docs holds it, so the rows a keyword search reads stay narrow) and, when the
    // row was written, its doc, in one statement.
    const r = await this.pool.query(
      `WITH s AS (
         INSERT INTO search_index AS s (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id,
           upload_time, update_time, data, data_schema_id, labels, tsv)
         VALUES ($1, $2, $3, true, $4, $5, $6, $7, $8, $9, $10, $11, $14, $15,
           setweight(to_tsvector('simple', unaccent($13)), 'A') || setweight(to_tsvector('simple', unaccent(search_text($11::jsonb,
             (SELECT service_properties FROM search_schemas WHERE group_id = $2 AND schema_id = $14)))), 'B')
           || setweight(to_tsvector('simple', unaccent($16)), 'C'))
         ON CONFLICT (asset_id) DO UPDATE SET version = EXCLUDED.version, indexed = true, status = EXCLUDED.status,
           name = EXCLUDED.name, content_type = EXCLUDED.content_type, size = EXCLUDED.size, creator_id = EXCLUDED.creator_id,
           upload_time = EXCLUDED.upload_time, update_time = EXCLUDED.update_time, data = EXCLUDED.data, doc = NULL,
           data_schema_id = EXCLUDED.data_schema_id, labels = EXCLUDED.labels, tsv = EXCLUDED.tsv
         WHERE s.version < EXCLUDED.version AND s.group_id = EXCLUDED.group_id
         RETURNING asset_id)
       INSERT INTO search_docs (asset_id, doc) SELECT asset_id, $12::jsonb FROM s
       ON CONFLICT (asset_id) DO UPDATE SET doc = EXCLUDED.doc`,
      [
        a.id,
        groupId,
        version,
        a.status,
        a.name,
        a.content_type,
        a.size,
        a.creator_id,
        a.upload_time,
        a.update_time,
        JSON.stringify(a.data),
        JSON.stringify(a),
        nameWords(a.name),
        dataSchemaId,
        terms.labels,
        [...terms.labels, ...terms.words].join(' '),
      ],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * file-deleted of the original (the asset goes to the trash) and file-undeleted (it comes back). Seen before the
   * asset's data, a placeholder row (not `indexed`) that the earlier events then fill.
   */
  async setDeleted(groupId: number, assetId: string, version: number, deleted: boolean): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO search_index AS s (asset_id, group_id, version, trash_version, deleted) VALUES ($1, $2, 0, $3, $4)
       ON CONFLICT (asset_id) DO UPDATE SET trash_version = EXCLUDED.trash_version, deleted = EXCLUDED.deleted
       WHERE s.trash_version < EXCLUDED.trash_version AND s.group_id = EXCLUDED.group_id`,
      [assetId, groupId, version, deleted],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * A schema as saved (DATA_SCHEMAS): kept unless an equal or newer version is, and then the keyword text of
   * every asset of that schema is made again (the name's words, weight A, and the addons' terms, C, stay).
   */
  async saveSchema(groupId: number, schemaId: number, serviceProperties: Record<string, unknown>, updatedAt: string): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const saved = await client.query(
        `INSERT INTO search_schemas AS s (group_id, schema_id, service_properties, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (group_id, schema_id) DO UPDATE SET service_properties = EXCLUDED.service_properties, updated_at = EXCLUDED.updated_at
         WHERE s.updated_at <= EXCLUDED.updated_at`,
        [groupId, schemaId, JSON.stringify(serviceProperties), updatedAt],
      );
      if ((saved.rowCount ?? 0) === 0) return false;
      await client.query(
        `UPDATE search_index SET tsv = ts_filter(tsv, '{a,c}') || setweight(to_tsvector('simple', unaccent(search_text(data, $3::jsonb))), 'B')
         WHERE group_id = $1 AND data_schema_id = $2 AND indexed`,
        [groupId, schemaId, JSON.stringify(serviceProperties)],
      );
      return true;
    });
  }

  /** Every collection an asset is in (COLLECTIONS), unless a newer list was applied; before the asset, a placeholder row. */
  async setMemberships(groupId: number, assetId: string, collectionIds: string[], version: number): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO search_index AS s (asset_id, group_id, version, collection_ids, collections_version) VALUES ($1, $2, 0, $3, $4)
       ON CONFLICT (asset_id) DO UPDATE SET collection_ids = EXCLUDED.collection_ids, collections_version = EXCLUDED.collections_version
       WHERE s.collections_version < EXCLUDED.collections_version AND s.group_id = EXCLUDED.group_id`,
      [assetId, groupId, collectionIds, version],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * An asset purged from the trash (ASSET_PURGES): it leaves every search, trashed ones too, as a tombstone whose
   * version is above all its events, so a late or replayed event never brings it back.
   */
  async setPurged(groupId: number, assetId: string, version: number): Promise<boolean> {
    const r = await this.pool.query<{ n: number }>(
      `WITH s AS (
         INSERT INTO search_index AS s (asset_id, group_id, version, trash_version, indexed, deleted) VALUES ($1, $2, $3, $3, false, true)
         ON CONFLICT (asset_id) DO UPDATE SET version = EXCLUDED.version, trash_version = EXCLUDED.trash_version, indexed = false, deleted = true, status = NULL, name = NULL,
           content_type = NULL, size = NULL, creator_id = NULL, upload_time = NULL, update_time = NULL, data = '{}'::jsonb, doc = NULL,
           data_schema_id = 0, labels = '{}', tsv = ''::tsvector, collection_ids = '{}'
         WHERE s.version < EXCLUDED.version AND s.trash_version < EXCLUDED.version AND s.group_id = EXCLUDED.group_id
         RETURNING asset_id),
       d AS (DELETE FROM search_docs WHERE asset_id IN (SELECT asset_id FROM s))
       SELECT count(*)::int AS n FROM s`,
      [assetId, groupId, version],
    );
    return (r.rows[0]?.n ?? 0) > 0;
  }

  /** Who sees a collection (COLLECTIONS, in stream order: the last message is its state). */
  async saveCollection(c: CollectionState): Promise<void> {
    await this.pool.query(
      `INSERT INTO search_collections AS c (collection_id, group_id, owner_id, shared, deleted) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (collection_id) DO UPDATE SET owner_id = EXCLUDED.owner_id, shared = EXCLUDED.shared, deleted = EXCLUDED.deleted
       WHERE c.group_id = EXCLUDED.group_id`,
      [c.collection_id, c.group_id, c.owner_id, c.shared, c.deleted],
    );
  }

  /**
   * Runs `fn` while holding a lock named `name` that every replica and command of this database sees (a PostgreSQL
   * advisory lock on a connection of its own); refused at once while another holds it.
   */
  async exclusively<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      const got = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [name]);
      if (!got.rows[0]?.ok) throw new Error(`${name} is already running`);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
      }
    } finally {
      client.release();
    }
  }

  /** Everything, before a replay rebuilds the model from the streams. */
  async clear(): Promise<void> {
    await this.pool.query('TRUNCATE search_index, search_docs, result_sets, search_schemas, search_collections');
  }
}
