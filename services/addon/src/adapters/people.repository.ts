import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool } from '@dam/db';
import { nearestPerson, withFace, type Person } from '../domain/people';

/** `people` and `face_assignments`: who each face is, per group, clustered as faces arrive. */
export class PeopleRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * A person for each face of one original, in order: the one already given to that face (a re-run), else the
   * group's most similar person at or above `threshold` (its centroid moves towards the face), else a new person.
   * One group at a time (an advisory lock), so two assets never create two people for one face; a re-run whose faces
   * all have their person only reads them.
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
      const { rows } = await client.query<{ person_id: string; centroid: number[]; faces: number }>('SELECT person_id, centroid, faces FROM people WHERE group_id = $1', [input.groupId]);
      const people: Person[] = rows.map((r) => ({ personId: r.person_id, centroid: r.centroid, faces: r.faces }));
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
          match.centroid = withFace(match, embedding);
          match.faces += 1;
          personId = match.personId;
          await client.query('UPDATE people SET centroid = $3, faces = $4 WHERE group_id = $1 AND person_id = $2', [input.groupId, personId, match.centroid, match.faces]);
        } else {
          personId = `person_${randomBytes(8).toString('hex')}`;
          people.push({ personId, centroid: [...embedding], faces: 1 });
          await client.query('INSERT INTO people (group_id, person_id, centroid, faces) VALUES ($1, $2, $3, 1)', [input.groupId, personId, embedding]);
        }
        await client.query('INSERT INTO face_assignments (group_id, asset_id, checksum, face_index, person_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING', [
          input.groupId,
          input.assetId,
          input.checksum,
          i,
          personId,
        ]);
        out.push(personId);
      }
      return out;
    });
  }
}
