import type { Pool, PoolClient } from '@dam/db';
import type { AssetSchema } from '../domain/asset-schema';
import type { SchemaStore } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

interface SchemaRow {
  id: number;
  group_id: number;
  name: string;
  schema: Record<string, unknown> | boolean;
  service_properties: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, group_id, name, schema, service_properties, created_at, updated_at';
const toSchema = (r: SchemaRow): AssetSchema => ({
  id: r.id,
  groupId: r.group_id,
  name: r.name,
  schema: r.schema,
  serviceProperties: r.service_properties,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** `asset_schemas`, scoped by group. */
export class SchemaRepository implements SchemaStore {
  constructor(private readonly db: Queryable) {}

  async create(groupId: number, s: Pick<AssetSchema, 'name' | 'schema' | 'serviceProperties'>): Promise<AssetSchema> {
    const { rows } = await this.db.query<SchemaRow>(
      `INSERT INTO asset_schemas (group_id, name, schema, service_properties) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
      [groupId, s.name, JSON.stringify(s.schema), s.serviceProperties],
    );
    return toSchema(rows[0] as SchemaRow);
  }

  async update(groupId: number, id: number, s: Pick<AssetSchema, 'name' | 'schema' | 'serviceProperties'>): Promise<AssetSchema | undefined> {
    const { rows } = await this.db.query<SchemaRow>(
      // Each save at least a millisecond after the last: its schema-saved event is named by that time (the outbox id),
      // and two saves of one schema in one millisecond (the second waited for the first's row lock) made a duplicate id.
      `UPDATE asset_schemas SET name = $3, schema = $4, service_properties = $5,
         updated_at = GREATEST(clock_timestamp(), updated_at + interval '1 millisecond')
       WHERE group_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [groupId, id, s.name, JSON.stringify(s.schema), s.serviceProperties],
    );
    return rows[0] ? toSchema(rows[0]) : undefined;
  }

  async find(groupId: number, id: number): Promise<AssetSchema | undefined> {
    const { rows } = await this.db.query<SchemaRow>(`SELECT ${COLUMNS} FROM asset_schemas WHERE group_id = $1 AND id = $2`, [groupId, id]);
    return rows[0] ? toSchema(rows[0]) : undefined;
  }

  async list(groupId: number, offset: number, limit: number): Promise<{ items: AssetSchema[]; total: number }> {
    const total = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM asset_schemas WHERE group_id = $1', [groupId]);
    const { rows } = await this.db.query<SchemaRow>(`SELECT ${COLUMNS} FROM asset_schemas WHERE group_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, [
      groupId,
      limit,
      offset,
    ]);
    return { items: rows.map(toSchema), total: total.rows[0]?.n ?? 0 };
  }
}
