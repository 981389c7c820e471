/** Cosine similarity of two embeddings (1: the same direction). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += (a[i] as number) * (b[i] as number);
    na += (a[i] as number) ** 2;
    nb += (b[i] as number) ** 2;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export interface Person {
  personId: string;
  centroid: number[];
  faces: number;
}

/** The person whose centroid is most similar to the face, if at least `threshold`. */
export function nearestPerson(people: readonly Person[], embedding: readonly number[], threshold: number): Person | undefined {
  let best: Person | undefined;
  let bestScore = threshold;
  for (const p of people) {
    const score = cosine(p.centroid, embedding);
    if (score >= bestScore) {
      best = p;
      bestScore = score;
    }
  }
  return best;
}

/** The centroid after one more face: the running mean. */
export const withFace = (p: Person, embedding: readonly number[]): number[] => p.centroid.map((c, i) => (c * p.faces + (embedding[i] ?? 0)) / (p.faces + 1));
