import http from 'node:http';
import express from 'express';
import { listen } from '@dam/testing';
import { answerWritesAfter } from '../src/http/write-answers';

async function withApp(before: () => Promise<void>, maxWaitMs: number, fn: (base: string) => Promise<void>) {
  const app = express();
  app.use(answerWritesAfter(before, maxWaitMs));
  app.all('/x', (_req, res) => void res.json({ ok: true }));
  const server = http.createServer(app);
  try {
    await fn(await listen(server));
  } finally {
    server.close();
  }
}

describe("a write's answer waits for the notices (issue 33)", () => {
  it('holds a POST until the notices are out, answers a GET at once, and never holds longer than its bound', async () => {
    let release!: () => void;
    let asked = 0;
    const before = () => {
      asked += 1;
      return new Promise<void>((r) => (release = r));
    };
    await withApp(before, 60_000, async (base) => {
      expect((await fetch(`${base}/x`)).status).toBe(200);
      expect(asked).toBe(0);
      let answered = false;
      const post = fetch(`${base}/x`, { method: 'POST' }).then((r) => {
        answered = true;
        return r.json();
      });
      while (asked === 0) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 100));
      expect(answered).toBe(false);
      release();
      expect(await post).toEqual({ ok: true });
    });
    // A wait that never ends: the answer goes after maxWaitMs anyway.
    await withApp(
      () => new Promise<void>(() => undefined),
      50,
      async (base) => {
        expect((await fetch(`${base}/x`, { method: 'DELETE' })).status).toBe(200);
      },
    );
    // A failed wait does not fail the answer.
    await withApp(
      () => Promise.reject(new Error('nats gone')),
      60_000,
      async (base) => {
        expect((await fetch(`${base}/x`, { method: 'PATCH' })).status).toBe(200);
      },
    );
  });
});
