import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import { nearestPerson, withFace, type Person } from '../domain/people';
import type { People } from '../domain/ports';

/** How many people, over all groups, a replica keeps in memory (some 8 KB each); a larger group is read per job. */
const CACHED_PEOPLE_MAX = 5_000;

/** A group's people as this replica last read them, and the highest version among them. */
interface CachedGroup {
  version: string;
  people: Map<string, Person>;
}

/** `people` and `face_assignments`: who each face is, per group, clustered as faces arrive. */
export class PeopleRepository implements People {
  /** Groups' people by recent use (a Map keeps insertion order: the first is the least recently used). */
  private readonly cache = new Map<number, CachedGroup>();

  constructor(
    private readonly pool: Pool,
    private readonly cachedPeopleMax = CACHED_PEOPLE_MAX,
  ) {}

  /**
   * A person for each face of one original, in order: the one already given to that face (a re-run), else the
   * group's most similar person at or above `threshold` (its centroid moves towards the face), else a new person.
   * One group at a time (an advisory lock), so two assets never create two people for one face; a re-run whose faces
   * all have their person only reads them. The group's people come from memory plus those changed since (by version,
   * under the lock: every change of the group was committed before it was granted).
   */
  async assign(input: { groupId: number; assetId: string; checksum: string; embeddings: number[][]; threshold: number }): Promise<string[]> {
    const knownFaces = 'SELECT face_index, person_id FROM face_assignments WHERE group_id = $1 AND asset_id = $2 AND checksum = $3';
    const keys = [input.groupId, input.assetId, input.checksum];
    // A re-run of an original whose faces all have their person: one read, no lock (a face's person, once given,
    // never changes).
    const before = await this.pool.query<{ face_index: number; person_id: string }>(knownFaces, keys);
    const all = new Map(before.rows.map((r) => [r.face_index, r.person_id]));
    const ready = input.embeddings.map((_, i) => all.get(i));
    if (ready.every((p) => p !== undefined)) return ready as string[];
    return withTransaction(this.pool, async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('people:' || $1, 0))`, [input.groupId]);
      const known = await client.query<{ face_index: number; person_id: string }>(knownFaces, keys);
      const given = new Map(known.rows.map((r) => [r.face_index, r.person_id]));
      // Working copies: what this transaction changes reaches the cache only through the next read (after commit).
      const people = [...(await this.peopleOf(client, input.groupId)).values()];
      const out: string[] = [];
      for (const [i, embedding] of input.embeddings.entries()) {
        const already = given.get(i);
        if (already) {
          out.push(already);
          continue;
        }
        const match = nearestPerson(people, embedding, input.threshold);
        let personId: string;
        if (match) {
          const moved: Person = { personId: match.personId, centroid: withFace(match, embedding), faces: match.faces + 1 };
          people[people.indexOf(match)] = moved;
          personId = match.personId;
          await client.query(`UPDATE people SET centroid = $3, faces = $4, version = nextval('people_version_seq') WHERE group_id = $1 AND person_id = $2`, [
            input.groupId,
            personId,
            moved.centroid,
            moved.faces,
          ]);
        } else {
          personId = `person_${randomBytes(8).toString('hex')}`;
          people.push({ personId, centroid: [...embedding], faces: 1 });
          await client.query('INSERT INTO people (group_id, person_id, centroid, faces) VALUES ($1, $2, $3, 1)', [input.groupId, personId, embedding]);
        }
        await client.query(
          'INSERT INTO face_assignments (group_id, asset_id, checksum, face_index, person_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
          [input.groupId, input.assetId, input.checksum, i, personId],
        );
        out.push(personId);
      }
      return out;
    });
  }

  /** The group's people (call under the group's lock): the cached ones brought up to date, or all of them read. */
  private async peopleOf(client: Pick<PoolClient, 'query'>, groupId: number): Promise<ReadonlyMap<string, Person>> {
    const cached = this.cache.get(groupId);
    const { rows } = await client.query<{ person_id: string; centroid: number[]; faces: number; version: string }>(
      'SELECT person_id, centroid, faces, version FROM people WHERE group_id = $1 AND version > $2',
      [groupId, cached?.version ?? '0'],
    );
    const group: CachedGroup = cached ?? { version: '0', people: new Map() };
    for (const r of rows) {
      group.people.set(r.person_id, { personId: r.person_id, centroid: r.centroid, faces: r.faces });
      if (BigInt(r.version) > BigInt(group.version)) group.version = r.version;
    }
    this.cache.delete(groupId);
    this.cache.set(groupId, group);
    this.evict();
    return group.people;
  }

  /** The least recently used groups go while the cache holds more people than it may (the group just used last). */
  private evict(): void {
    let total = [...this.cache.values()].reduce((n, g) => n + g.people.size, 0);
    for (const [groupId, group] of this.cache) {
      if (total <= this.cachedPeopleMax) break;
      this.cache.delete(groupId);
      total -= group.people.size;
    }
  }
}
