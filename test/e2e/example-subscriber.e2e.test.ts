import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import sharp from 'sharp';
import { waitFor } from '@dam/testing';
import { useSuite } from './suite';

/** examples/subscriber (docs/asyncapi.yaml's delivery rules in practice) against the running suite. */
const e2e = useSuite();
const { upload, settled } = e2e.api;
let example: ChildProcessWithoutNullStreams | undefined;
e2e.beforeStop(() => example?.kill('SIGKILL'));

it('follows an upload from file-saved to file-processed with the read-only subscriber identity, and stops on SIGTERM', async () => {
  const dir = path.join(__dirname, '..', '..', 'examples', 'subscriber');
  example = spawn(process.execPath, ['--import', 'tsx', 'subscribe.ts'], {
    cwd: dir,
    env: { ...process.env, NATS_URL: e2e.suite.natsUrl, NATS_SUBSCRIBER: 'subscriber-example', NATS_NKEY_SEED: e2e.suite.subscriberSeed },
  });
  const lines: Array<{ type: string; asset_id: string; version: number; status: string | null }> = [];
  let stderr = '';
  let buffered = '';
  example.stdout.on('data', (c: Buffer) => {
    buffered += c.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const l of parts) if (l.trim()) lines.push(JSON.parse(l));
  });
  example.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => example?.once('exit', (code) => resolve(code)));
  await waitFor(() => stderr.includes('following ASSET_EVENTS'), { timeoutMs: 30_000, description: `the example to start (${stderr})` });

  const id = await upload(
    await sharp({ create: { width: 64, height: 48, channels: 3, background: '#4a8' } })
      .png()
      .toBuffer(),
    'followed.png',
  );
  expect((await settled(id)).status).toBe('OK');
  await waitFor(() => lines.some((l) => l.asset_id === id && l.type === 'file-processed'), { timeoutMs: 30_000, description: 'file-processed printed' });
  const mine = lines.filter((l) => l.asset_id === id);
  expect(mine.map((l) => l.type)).toEqual(['file-saved', 'file-processed']);
  expect(mine[0]?.version).toBeLessThan(mine[1]?.version ?? 0);
  expect(mine[1]?.status).toBe('OK');

  example.kill('SIGTERM');
  expect(await exited).toBe(0);
});
