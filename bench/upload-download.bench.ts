/**
 * Upload and download throughput of one large file, and the upload service's peak memory, against a suite
 * started with deploy/local/up. Prints one JSON line of figures.
 *   pnpm exec tsx bench/upload-download.bench.ts [sizeMiB=1024]
 * Peak memory is the upload process's VmHWM (read from /proc through .data/run/upload.pid), so the figure
 * covers the whole life of that process: restart the suite first for a clean reading.
 */
import { createHash, randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';

const BASE = process.env.DAM_BASE_URL ?? 'http://127.0.0.1:8080';
const UPLOAD = process.env.DAM_UPLOAD_URL ?? 'http://127.0.0.1:8081';
const DATA = process.env.DAM_DATA_DIR ?? path.join(__dirname, '..', '.data');
const sizeMiB = Number(process.argv[2] ?? 1024);
const CHUNK = 1024 * 1024;

function peakRssMiB(service: string): number | undefined {
  try {
    const pid = readFileSync(path.join(DATA, 'run', `${service}.pid`), 'utf8').trim();
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Math.round(Number(kb) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** A multipart body of `sizeMiB` random bytes generated on the fly, so the client holds one chunk at a time. */
function multipartBody(boundary: string, md5: ReturnType<typeof createHash>): Readable {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  let sent = 0;
  let stage: 'head' | 'body' | 'tail' | 'done' = 'head';
  return new Readable({
    read() {
      if (stage === 'head') {
        stage = 'body';
        this.push(head);
      } else if (stage === 'body') {
        const chunk = randomFillSync(Buffer.allocUnsafe(CHUNK));
        md5.update(chunk);
        this.push(chunk);
        if (++sent === sizeMiB) stage = 'tail';
      } else if (stage === 'tail') {
        stage = 'done';
        this.push(tail);
      } else this.push(null);
    },
  });
}

async function main(): Promise<void> {
  const login = await fetch(`${BASE}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: process.env.ADMIN_EMAIL ?? 'admin@example.com', password: process.env.ADMIN_PASSWORD ?? 'admin-password' }),
  });
  const { jwt } = (await login.json()) as { jwt: string };
  const auth = { authorization: `Bearer ${jwt}` };

  const boundary = `bench${Date.now()}`;
  const md5 = createHash('md5');
  const rssBefore = peakRssMiB('upload');
  const t0 = performance.now();
  const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, {
    method: 'POST',
    headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Readable.toWeb(multipartBody(boundary, md5)) as unknown as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  const uploaded = (await res.json()) as { files: { id: string; checksum: string }[] };
  const uploadS = (performance.now() - t0) / 1000;
  const file = uploaded.files?.[0];
  if (res.status !== 200 || !file) throw new Error(`upload failed: ${res.status} ${JSON.stringify(uploaded)}`);
  const checksumOk = file.checksum === md5.digest('hex');

  const t1 = performance.now();
  const dl = await fetch(`${BASE}/api/v1/assets/${file.id}/content/original/download`, { headers: auth });
  let bytes = 0;
  for await (const chunk of dl.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  const downloadS = (performance.now() - t1) / 1000;

  console.log(
    JSON.stringify({
      bench: 'upload-download',
      size_mib: sizeMiB,
      upload_mib_s: +(sizeMiB / uploadS).toFixed(1),
      download_mib_s: +(bytes / CHUNK / downloadS).toFixed(1),
      checksum_ok: checksumOk,
      download_complete: bytes === sizeMiB * CHUNK,
      upload_peak_rss_mib_before: rssBefore,
      upload_peak_rss_mib_after: peakRssMiB('upload'),
      gateway_peak_rss_mib: peakRssMiB('gateway'),
      metadata_peak_rss_mib: peakRssMiB('metadata'),
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
