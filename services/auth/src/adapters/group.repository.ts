import type { GroupRecord, Groups } from '../domain/ports';
import type { Db } from './db';

export class GroupRepository implements Groups {
  constructor(private readonly db: Db) {}

  async insert(name: string): Promise<GroupRecord> {
    const r = await this.db.query<GroupRecord>('INSERT INTO groups (name) VALUES ($1) RETURNING id, name, created_at', [name]);
    return r.rows[0] as GroupRecord;
  }

  async count(): Promise<number> {
    const r = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM groups');
    return r.rows[0]?.n ?? 0;
  }
}
