import { cosine, nearestPerson, withFace } from '../src/domain/people';

describe('people', () => {
  it('measure faces by the cosine of their embeddings', () => {
    expect(cosine([1, 0], [1, 0])).toBe(1);
    expect(cosine([1, 0], [0, 1])).toBe(0);
    expect(cosine([1, 1], [2, 2])).toBeCloseTo(1);
    expect(cosine([0, 0], [1, 1])).toBe(0);
  });

  it('pick the most similar person at or above the threshold, or none', () => {
    const people = [
      { personId: 'a', centroid: [1, 0], faces: 1 },
      { personId: 'b', centroid: [0.8, 0.6], faces: 3 },
    ];
    expect(nearestPerson(people, [0.7, 0.7], 0.5)?.personId).toBe('b');
    expect(nearestPerson(people, [0, 1], 0.7)).toBeUndefined();
  });

  it('move a person towards each face assigned (a running mean)', () => {
    expect(withFace({ personId: 'a', centroid: [1, 0], faces: 1 }, [0, 1])).toEqual([0.5, 0.5]);
    expect(withFace({ personId: 'a', centroid: [0.5, 0.5], faces: 2 }, [1, 1])).toEqual([2 / 3, 2 / 3]);
  });
});
