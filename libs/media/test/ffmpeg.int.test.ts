import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { scaled } from '@dam/testing';
import { Ffmpeg, resolveTools, ToolFailedError, ToolStalledError, UnprocessableVideoError } from '../src';

describe('ffmpeg wrapper (real binaries)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ffmpeg-wrapper-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('uses the configured tools, falls back to the installer packages, and says when neither runs', async () => {
    const system = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' };
    await expect(resolveTools(system, () => ({}))).resolves.toMatchObject({ ...system, from: { ffmpeg: 'configured', ffprobe: 'configured' } });
    const broken = { ffmpeg: path.join(dir, 'no-ffmpeg'), ffprobe: 'ffprobe' };
    const installer = () => ({ ffmpeg: execFileSync('which', ['ffmpeg'], { encoding: 'utf8' }).trim() });
    await expect(resolveTools(broken, installer)).resolves.toMatchObject({ from: { ffmpeg: 'installer', ffprobe: 'configured' } });
    await expect(resolveTools(broken, () => ({}))).rejects.toThrow(/ffmpeg does not run: ".*no-ffmpeg" \(FFMPEG_PATH\)/);
  });

  it("fails with ffmpeg's own reason", async () => {
    const tools = new Ffmpeg({ ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' });
    const run = tools.run(['-i', path.join(dir, 'missing.mp4'), '-f', 'null', '-']);
    await expect(run).rejects.toBeInstanceOf(ToolFailedError);
    await expect(run).rejects.toThrow(/No such file or directory/);
    await expect(tools.probe(path.join(dir, 'missing.mp4'))).rejects.toBeInstanceOf(UnprocessableVideoError);
  });

  it('kills a tool that stops making progress instead of waiting for ever', async () => {
    // A FIFO nobody writes to: ffmpeg blocks opening its input and prints nothing.
    const fifo = path.join(dir, 'stuck.fifo');
    execFileSync('mkfifo', [fifo]);
    const tools = new Ffmpeg({ ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' }, 500);
    const started = Date.now();
    await expect(tools.run(['-i', fifo, '-f', 'null', '-'])).rejects.toBeInstanceOf(ToolStalledError);
    // The 500 ms stall limit plus starting ffmpeg (slower on a slower machine); waiting for ever is what fails.
    expect(Date.now() - started).toBeLessThan(scaled(5_000));
    await expect(tools.probe(fifo)).rejects.toThrow(/made no progress/);
  });
});
