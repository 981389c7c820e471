import { randomBytes } from 'node:crypto';
import { conflict } from '@dam/errors';
import type { UserRecord } from '../domain/users';
import type { NewUser, Page, UserChanges, Users } from '../domain/ports';
import { isUniqueViolation, offsetOf, type Db } from './db';

const COLUMNS = `id, group_id, email, password_hash, first_name, last_name, role_id, disabled, preferences,
  upload_key, access_id, token_epoch, created_at, updated_at`;

const newAccessId = (): string => randomBytes(16).toString('hex');
const newUploadKey = (): string => `upk_${randomBytes(24).toString('base64url')}`;

export class UserRepository implements Users {
  constructor(private readonly db: Db) {}

  /** Every live account of an email, oldest first: an email is unique per group only. */
  async findAllByEmail(email: string, limit = 20): Promise<UserRecord[]> {
    const r = await this.db.query<UserRecord>(`SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL ORDER BY id LIMIT $2`, [
      email,
      limit,
    ]);
    return r.rows;
  }

  /** Group scoping is part of the query: a user of another group is simply not found. */
  async findVisible(groupId: number, id: number, forUpdate = false): Promise<UserRecord | undefined> {
    const r = await this.db.query<UserRecord>(
      `SELECT ${COLUMNS} FROM users WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL${forUpdate ? ' FOR UPDATE' : ''}`,
      [groupId, id],
    );
    return r.rows[0];
  }

  async listInGroup(groupId: number, page: Page): Promise<{ items: UserRecord[]; total: number }> {
    const [items, total] = await Promise.all([
      this.db.query<UserRecord>(`SELECT ${COLUMNS} FROM users WHERE group_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT $2 OFFSET $3`, [
        groupId,
        page.page_size,
        offsetOf(page),
      ]),
      this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE group_id = $1 AND deleted_at IS NULL', [groupId]),
    ]);
    return { items: items.rows, total: total.rows[0]?.n ?? 0 };
  }

  async insert(u: NewUser): Promise<UserRecord> {
    try {
      const r = await this.db.query<UserRecord>(
        `INSERT INTO users (group_id, email, password_hash, first_name, last_name, role_id, upload_key, access_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
        [u.group_id, u.email, u.password_hash, u.first_name, u.last_name, u.role_id, newUploadKey(), newAccessId()],
      );
      return r.rows[0] as UserRecord;
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('EMAIL_TAKEN', 'A user with this email already exists in this group');
      throw err;
    }
  }

  async update(groupId: number, id: number, c: UserChanges): Promise<UserRecord | undefined> {
    const ends = `($5::text IS NOT NULL OR ($4::boolean AND NOT disabled))`;
    const r = await this.db.query<UserRecord>(
      // A new password or disabling the user ends every token signed before (token_epoch), and the upload key with
      // them: it is a credential too, and would outlive the password it was handed out with (security review F17).
      // The user's next login answers the new one.
      `UPDATE users SET role_id = COALESCE($3, role_id), disabled = COALESCE($4, disabled),
         password_hash = COALESCE($5, password_hash),
         token_epoch = token_epoch + CASE WHEN ${ends} THEN 1 ELSE 0 END,
         upload_key = CASE WHEN ${ends} THEN $6 ELSE upload_key END,
         updated_at = now()
       WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
      [groupId, id, c.role_id ?? null, c.disabled ?? null, c.password_hash ?? null, newUploadKey()],
    );
    return r.rows[0];
  }

  /** Keeps the row (assets name it as creator) but frees the email and blocks every way in. */
  async softDelete(groupId: number, id: number): Promise<boolean> {
    const r = await this.db.query(
      `UPDATE users SET deleted_at = now(), disabled = true, email = email || '#deleted-' || id, updated_at = now()
       WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL`,
      [groupId, id],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** The live user a signed link's `accessId` names (any group: the id is unique), or undefined. */
  async findByAccessId(accessId: string): Promise<UserRecord | undefined> {
    const r = await this.db.query<UserRecord>(`SELECT ${COLUMNS} FROM users WHERE access_id = $1 AND deleted_at IS NULL`, [accessId]);
    return r.rows[0];
  }

  /**
   * A new `accessID`: every link signed under the old one stops working at once, and so do the links the user's API
   * keys minted (each key's accessID is replaced in the same statement).
   */
  async rotateAccessId(groupId: number, id: number): Promise<string | undefined> {
    const r = await this.db.query<{ access_id: string }>(
      `WITH u AS (
         UPDATE users SET access_id = $3, updated_at = now() WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL
         RETURNING id, access_id
       ), k AS (
         UPDATE api_keys SET access_id = replace(gen_random_uuid()::text, '-', '') WHERE user_id IN (SELECT id FROM u)
       )
       SELECT access_id FROM u`,
      [groupId, id, newAccessId()],
    );
    return r.rows[0]?.access_id;
  }

  async findByUploadKey(uploadKey: string): Promise<UserRecord | undefined> {
    const r = await this.db.query<UserRecord>(`SELECT ${COLUMNS} FROM users WHERE upload_key = $1 AND deleted_at IS NULL`, [uploadKey]);
    return r.rows[0];
  }

  /** A new upload key (CONTRACT §12): the old one answers 401 at once. */
  async rotateUploadKey(groupId: number, id: number): Promise<string | undefined> {
    const r = await this.db.query<{ upload_key: string }>(
      'UPDATE users SET upload_key = $3, updated_at = now() WHERE group_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING upload_key',
      [groupId, id, newUploadKey()],
    );
    return r.rows[0]?.upload_key;
  }

  async setPreferences(id: number, preferences: Record<string, unknown>): Promise<void> {
    await this.db.query('UPDATE users SET preferences = $2, updated_at = now() WHERE id = $1', [id, JSON.stringify(preferences)]);
  }

  async touchLogin(id: number): Promise<void> {
    await this.db.query('UPDATE users SET last_login_at = now() WHERE id = $1', [id]);
  }
}
