import { createPool, type Pool } from '@dam/db';
import { createDatabase } from '@dam/testing';
import { PeopleRepository } from '../src/adapters/people.repository';
import { migrateAddon } from '../src/migrations';

/** Embeddings of three "people": unit vectors far apart, and a face near each. */
const axis = (i: number, wobble = 0): number[] => Array.from({ length: 8 }, (_, k) => (k === i ? 1 : k === (i + 1) % 8 ? wobble : 0));

describe('people of a group, clustered by two replicas of the addon service', () => {
  const pools: Pool[] = [];
  let url: string;
  const replica = (cachedPeopleMax?: number) => {
    const pool = createPool(url, { max: 2 });
    pools.push(pool);
    return new PeopleRepository(pool, cachedPeopleMax);
  };
  const face = (repo: PeopleRepository, groupId: number, assetId: string, embeddings: number[][]) =>
    repo.assign({ groupId, assetId, checksum: `c-${assetId}`, embeddings, threshold: 0.9 });

  beforeAll(async () => {
    url = await createDatabase('addon_people');
    const pool = createPool(url, { max: 1 });
    await migrateAddon(pool);
    await pool.end();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it('sees the people and the centroid moves another replica made since it last looked', async () => {
    const a = replica();
    const b = replica();
    // b has read the group (one person) before a changes it.
    const [first] = await face(b, 1, 'b1', [axis(0)]);
    const [second] = await face(a, 1, 'a1', [axis(1)]);
    expect(second).not.toBe(first);
    // The same people for the same faces, whichever replica asks.
    expect(await face(b, 1, 'b2', [axis(1, 0.1)])).toEqual([second]);
    expect(await face(a, 1, 'a2', [axis(0, 0.1)])).toEqual([first]);
    // a moved person 0's centroid (a second face): b's copy follows, as the faces count in the database shows.
    const moved = await pools[0]!.query<{ faces: number }>('SELECT faces FROM people WHERE person_id = $1', [first]);
    expect(moved.rows).toEqual([{ faces: 2 }]);
    expect(await face(b, 1, 'b3', [axis(0, 0.2)])).toEqual([first]);
    expect((await pools[0]!.query<{ faces: number }>('SELECT faces FROM people WHERE person_id = $1', [first])).rows).toEqual([{ faces: 3 }]);
    // Other groups are apart.
    expect(await face(a, 2, 'g2', [axis(0)])).not.toEqual([first]);
  });

  it('keeps nothing of a transaction that rolled back, and reads a group again once it was evicted', async () => {
    const a = replica(1); // room for one person: reading another group evicts this one
    const db = pools.at(-1)!;
    const facesOf = async (personId: string) => (await db.query<{ faces: number }>('SELECT faces FROM people WHERE person_id = $1', [personId])).rows;
    const [p] = await face(a, 3, 'x1', [axis(2)]);
    // The person moves, then the face's assignment fails: the transaction rolls back, and so must the move.
    await db.query(`ALTER TABLE face_assignments ADD CONSTRAINT no_bad CHECK (asset_id <> 'bad')`);
    await expect(face(a, 3, 'bad', [axis(2, 0.3)])).rejects.toThrow();
    await db.query('ALTER TABLE face_assignments DROP CONSTRAINT no_bad');
    expect(await facesOf(p!)).toEqual([{ faces: 1 }]);
    expect(await face(a, 3, 'x2', [axis(2, 0.1)])).toEqual([p]);
    expect(await facesOf(p!)).toEqual([{ faces: 2 }]); // 3 if the rolled-back move had stayed in memory
    // Another group takes the only place; group 3 is read again, whole, and still knows its person as it is.
    await face(a, 4, 'y1', [axis(3)]);
    expect(await face(a, 3, 'x3', [axis(2, 0.2)])).toEqual([p]);
    expect(await facesOf(p!)).toEqual([{ faces: 3 }]);
  });
});
