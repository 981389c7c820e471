import { withDefaults, type Settings } from '../domain/settings';
import type { SettingsStore } from '../domain/ports';
import type { Db } from './db';

export class SettingsRepository implements SettingsStore {
  constructor(private readonly db: Db) {}

  async get(groupId: number, forUpdate = false): Promise<Settings | undefined> {
    const r = await this.db.query<{ data: Settings }>(`SELECT data FROM settings WHERE group_id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [groupId]);
    const data = r.rows[0]?.data;
    return data && withDefaults(data);
  }

  async insert(groupId: number, data: Settings): Promise<void> {
    await this.db.query('INSERT INTO settings (group_id, data) VALUES ($1, $2) ON CONFLICT (group_id) DO NOTHING', [groupId, JSON.stringify(data)]);
  }

  async replace(groupId: number, data: Settings): Promise<void> {
    await this.db.query('UPDATE settings SET data = $2, updated_at = now() WHERE group_id = $1', [groupId, JSON.stringify(data)]);
  }
}
