import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '../domain/api-keys';
import type { ApiKeys, KeyWithUser, Page } from '../domain/ports';
import { offsetOf, type Db } from './db';

/** Same form as a user's accessID: a link does not tell whether a key or a signed-in user minted it. */
export const newKeyAccessId = (): string => randomBytes(16).toString('hex');

const COLUMNS = 'id, group_id, user_id, name, role, created_at';

export class ApiKeyRepository implements ApiKeys {
  constructor(private readonly db: Db) {}

  async insert(k: Omit<ApiKeyRecord, 'created_at'>, keyHash: string): Promise<ApiKeyRecord> {
    const r = await this.db.query<ApiKeyRecord>(
      `INSERT INTO api_keys (id, group_id, user_id, name, role, key_hash, access_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${COLUMNS}`,
      [k.id, k.group_id, k.user_id, k.name, k.role, keyHash, newKeyAccessId()],
    );
    return r.rows[0] as ApiKeyRecord;
  }

  async listActive(groupId: number, page: Page): Promise<{ items: ApiKeyRecord[]; total: number }> {
    const [items, total] = await Promise.all([
      this.db.query<ApiKeyRecord>(`SELECT ${COLUMNS} FROM api_keys WHERE group_id = $1 AND revoked_at IS NULL ORDER BY created_at, id LIMIT $2 OFFSET $3`, [
        groupId,
        page.page_size,
        offsetOf(page),
      ]),
      this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE group_id = $1 AND revoked_at IS NULL', [groupId]),
    ]);
    return { items: items.rows, total: total.rows[0]?.n ?? 0 };
  }

  /** The key's owner and name once revoked now; undefined when the group has no such unrevoked key. */
  async revoke(groupId: number, id: string): Promise<{ user_id: number; name: string } | undefined> {
    const r = await this.db.query<{ user_id: number; name: string }>(
      'UPDATE api_keys SET revoked_at = now() WHERE group_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING user_id, name',
      [groupId, id],
    );
    return r.rows[0];
  }

  async revokeAllOfUser(userId: number): Promise<void> {
    await this.db.query('UPDATE api_keys SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [userId]);
  }

  /** The unrevoked key of this hash, of a user not deleted, with its user's role and state. */
  async findByHash(keyHash: string): Promise<KeyWithUser | undefined> {
    return this.findOne('k.key_hash = $1', keyHash);
  }

  /** The accessID of a key's links, while the key is not revoked (its user may be disabled: the edge says 403). */
  async accessIdOf(groupId: number, keyId: string): Promise<string | undefined> {
    const r = await this.db.query<{ access_id: string }>('SELECT access_id FROM api_keys WHERE group_id = $1 AND id = $2 AND revoked_at IS NULL', [
      groupId,
      keyId,
    ]);
    return r.rows[0]?.access_id;
  }

  /** The unrevoked key whose links carry this accessID, of a user not deleted. */
  async findByAccessId(accessId: string): Promise<KeyWithUser | undefined> {
    return this.findOne('k.access_id = $1', accessId);
  }

  private async findOne(where: 'k.key_hash = $1' | 'k.access_id = $1', value: string): Promise<KeyWithUser | undefined> {
    const r = await this.db.query<ApiKeyRecord & { user_role_id: number; user_disabled: boolean }>(
      `SELECT k.id, k.group_id, k.user_id, k.name, k.role, k.created_at, u.role_id AS user_role_id, u.disabled AS user_disabled
       FROM api_keys k JOIN users u ON u.id = k.user_id
       WHERE ${where} AND k.revoked_at IS NULL AND u.deleted_at IS NULL`,
      [value],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    const { user_role_id, user_disabled, ...key } = row;
    return { key, user_role_id, user_disabled };
  }
}
