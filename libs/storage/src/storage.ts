import http from 'node:http';
import type { Socket } from 'node:net';
import https from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import { Client, CopyDestinationOptions, CopySourceOptions } from 'minio';

export interface StorageConfig {
  /** `http(s)://host:port` of the S3 server. */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region?: string;
  /** Part size for multipart uploads of streams (default 16 MiB: large files stay few parts, memory stays flat). */
  partSize?: number;
  /**
   * `http(s)://host:port` of the S3 server as clients reach it, for the presigned URLs handed to them
   * (`presignPublicGet`): Signature V4 covers the host, so a URL signed for `endpoint` fails at any other address and
   * no proxy can rewrite it. Default: `endpoint` (links that work only where the service itself stands).
   */
  publicEndpoint?: string;
  /** Base of anonymous object URLs as clients reach the bucket (default: `publicEndpoint`, then `endpoint`). */
  publicUrl?: string;
  /**
   * Sign request bodies (SHA-256 of every byte, in the Signature V4 `x-amz-content-sha256`) on plain http. Over
   * https the client never does (the channel protects the body). Default: only when the endpoint is not on this
   * machine, where nobody else can see or alter the traffic anyway.
   */
  signPayload?: boolean;
  /** How long the server may leave a request unanswered (see S3_TIMEOUT_MS); 30 s by default. */
  timeoutMs?: number;
  /** Objects up to this size are copied with one CopyObject (S3's limit, 5 GiB), larger ones in parts (tests lower it). */
  maxSingleCopyBytes?: number;
}

/** The S3 variables every service parses (`s3Env` in @dam/config). */
export interface S3EnvConfig {
  S3_ENDPOINT: string;
  S3_ACCESS_KEY: string;
  S3_SECRET_KEY: string;
  S3_BUCKET: string;
  S3_REGION: string;
  S3_PUBLIC_ENDPOINT?: string | undefined;
  S3_PUBLIC_URL?: string | undefined;
  S3_SIGN_PAYLOAD?: 'auto' | 'true' | 'false' | undefined;
  S3_TIMEOUT_MS?: number | undefined;
}

export const storageConfigFromEnv = (env: S3EnvConfig, extra: Pick<StorageConfig, 'partSize'> = {}): StorageConfig => ({
  endpoint: env.S3_ENDPOINT,
  accessKey: env.S3_ACCESS_KEY,
  secretKey: env.S3_SECRET_KEY,
  bucket: env.S3_BUCKET,
  region: env.S3_REGION,
  ...(env.S3_PUBLIC_ENDPOINT ? { publicEndpoint: env.S3_PUBLIC_ENDPOINT } : {}),
  ...(env.S3_PUBLIC_URL ? { publicUrl: env.S3_PUBLIC_URL } : {}),
  ...(env.S3_SIGN_PAYLOAD === 'true' || env.S3_SIGN_PAYLOAD === 'false' ? { signPayload: env.S3_SIGN_PAYLOAD === 'true' } : {}),
  ...(env.S3_TIMEOUT_MS ? { timeoutMs: env.S3_TIMEOUT_MS } : {}),
  ...extra,
});

export interface ObjectStat {
  size: number;
  etag: string;
  contentType: string | undefined;
  lastModified: Date;
}

export interface PutOptions {
  contentType: string;
  /** Known length lets the client pick the part size; unknown streams are uploaded in parts anyway. */
  size?: number;
  metadata?: Record<string, string>;
}

export interface CopyOptions {
  /**
   * The copy's new metadata, from the source's stat (S3's REPLACE directive): its Content-Type, and a
   * Content-Disposition when given. Undefined (or no `metadata`): the source's metadata is kept.
   */
  metadata?: (source: ObjectStat) => { contentType: string; contentDisposition?: string } | undefined;
}

export interface PresignOptions {
  responseContentDisposition?: string;
  responseContentType?: string;
}

export interface Storage {
  readonly bucket: string;
  readonly client: Client;
  /** The anonymous URL of an object (path style under `publicUrl`, default the endpoint): readable once public. */
  publicUrl(key: string): string;
  /**
   * Makes the objects under `prefix` (`public/`) anonymously readable (GetObject), and no others: the bucket policy
   * is one constant statement on that prefix, never a list of objects (security review F14: S3 servers cap a policy
   * at about 20 KiB, so a list stopped growing at a few hundred objects). Reads the policy first and writes it only
   * when it differs (an older install's list of objects is replaced by it); returns whether it wrote.
   */
  publishPrefix(prefix: string): Promise<boolean>;
  /**
   * A server-side copy (S3 CopyObject: no byte passes through this process), with the metadata `options.metadata`
   * gives (or the source's). Objects over 5 GiB (a single CopyObject's limit) are copied in parts. Throws
   * `ObjectNotFoundError` when the source does not exist.
   */
  copy(sourceKey: string, targetKey: string, options?: CopyOptions): Promise<void>;
  ensureBucket(): Promise<void>;
  putStream(key: string, body: Readable, options: PutOptions): Promise<{ etag: string }>;
  putBuffer(key: string, body: Buffer, options: PutOptions): Promise<{ etag: string }>;
  /** Throws `ObjectNotFoundError` when the object does not exist. */
  getStream(key: string): Promise<Readable>;
  /** The whole object in memory (small objects only: an image to analyse, a test's check); as getStream otherwise. */
  getBuffer(key: string): Promise<Buffer>;
  /** Bytes `start..endInclusive`; throws `ObjectNotFoundError` when the object does not exist. */
  getRange(key: string, start: number, endInclusive: number): Promise<Readable>;
  /** null when the object does not exist. */
  stat(key: string): Promise<ObjectStat | null>;
  /** Succeeds when the object is already gone. */
  remove(key: string): Promise<void>;
  /** Removes every object under the prefix; returns how many were removed. */
  removePrefix(prefix: string): Promise<number>;
  /** Keys of the objects under the prefix, in key order. */
  listKeys(prefix: string): Promise<string[]>;
  /** A presigned GET for this suite's own use (the gateway, ffprobe): signed for `endpoint`, as the services reach it. */
  presignGet(key: string, expirySeconds: number, options?: PresignOptions): Promise<string>;
  /**
   * A presigned GET handed to a client outside: signed for `publicEndpoint` (default `endpoint`). Made offline: the
   * region is known, so nothing is sent to an address this process may not reach.
   */
  presignPublicGet(key: string, expirySeconds: number, options?: PresignOptions): Promise<string>;
  /** Resolves when the server answers and the bucket exists (readiness). */
  ping(): Promise<void>;
  /** `ping()` as a yes/no, for /readyz. */
  reachable(): Promise<boolean>;
}

export class ObjectNotFoundError extends Error {
  override readonly name = 'ObjectNotFoundError';
  constructor(readonly key: string) {
    super(`object not found: ${key}`);
  }
}

const NOT_FOUND_CODES = new Set(['NoSuchKey', 'NotFound', 'NoSuchObject']);

export function isNotFoundError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && NOT_FOUND_CODES.has(code);
}

// S3 quotes etags; callers compare them with MD5 hex digests.
const cleanEtag = (etag: string | undefined): string => (etag ?? '').replace(/^"|"$/g, '');

/**
 * Keep-alive connections to the S3 server that fail when the server leaves a request unanswered for `idleMs`: the
 * minio client sets no timeout, so a hung server held every request (and its client) for ever. A socket idle
 * because this process reads slowly (paused: its own client is slow) or because the request body is still coming
 * from this process's client is not the server's doing and is left alone.
 */
function timedAgent(useSSL: boolean, idleMs: number): http.Agent {
  // `timeout` too: a kept-alive socket gets the agent's timeout back each time it returns to the pool.
  const agent = useSSL ? new https.Agent({ keepAlive: true, timeout: idleMs }) : new http.Agent({ keepAlive: true, timeout: idleMs });
  const create = agent.createConnection.bind(agent) as (options: object, callback?: (error: Error | null, socket: Duplex) => void) => Duplex;
  agent.createConnection = ((options: object, callback?: (error: Error | null, socket: Duplex) => void) => {
    const socket = create(options, callback) as Socket;
    socket.setTimeout(idleMs);
    socket.on('timeout', () => {
      const request = (socket as unknown as { _httpMessage?: http.ClientRequest })._httpMessage;
      if (!request) {
        socket.destroy(); // idle in the pool
        return;
      }
      if (socket.isPaused()) return;
      if (!request.writableEnded && !socket.writableNeedDrain) return;
      socket.destroy(Object.assign(new Error(`the S3 server answered nothing for ${idleMs} ms`), { code: 'ETIMEDOUT' }));
    });
    return socket;
  }) as typeof agent.createConnection;
  return agent;
}

/** The host, port and scheme of an S3 endpoint; a path, query or credentials in it could never be signed for. */
export function s3EndpointProblem(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http(s) URL';
  if (url.pathname !== '/' || url.search || url.hash || url.username || url.password) {
    return 'must be only scheme, host and port (http(s)://host[:port]): no path, query or credentials';
  }
  return undefined;
}

function endpointOf(endpoint: string): { endPoint: string; port: number; useSSL: boolean } {
  const url = new URL(endpoint);
  const useSSL = url.protocol === 'https:';
  return { endPoint: url.hostname, port: Number(url.port || (useSSL ? 443 : 80)), useSSL };
}

/** Parts of a copy in parts (UploadPartCopy): 1 GiB, fewer than 10,000 parts up to S3's 5 TiB objects. */
const COPY_PART_BYTES = 1024 ** 3;

/** The one statement that makes `prefix` anonymously readable (its objects, never the bucket or its listing). */
export function publicPrefixPolicy(bucket: string, prefix: string): object {
  return {
    Version: '2012-10-17',
    Statement: [{ Sid: 'PublicPrefix', Effect: 'Allow', Principal: { AWS: ['*'] }, Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${bucket}/${prefix}*`] }],
  };
}

/** Whether the stored policy is `wanted` (servers answer it reformatted: `"*"` for `["*"]`, other key order). */
function samePolicy(current: string, wanted: object): boolean {
  const norm = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.length === 1 ? norm(value[0]) : value.map(norm);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => [k, norm(v)]),
      );
    }
    return value;
  };
  try {
    return current !== '' && JSON.stringify(norm(JSON.parse(current))) === JSON.stringify(norm(wanted));
  } catch {
    return false;
  }
}

export function createStorage(config: StorageConfig): Storage {
  const internal = endpointOf(config.endpoint);
  const region = config.region ?? 'us-east-1';
  const partSize = config.partSize ?? 16 * 1024 * 1024;
  const client = new Client({
    ...internal,
    accessKey: config.accessKey,
    secretKey: config.secretKey,
    region,
    pathStyle: true,
    partSize,
    transportAgent: timedAgent(internal.useSSL, config.timeoutMs ?? 30_000),
  });
  const loopback = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(internal.endPoint);
  // minio hashes every uploaded byte with SHA-256 on plain http; UNSIGNED-PAYLOAD skips it (S3 accepts both).
  if (!(config.signPayload ?? !loopback)) (client as unknown as { enableSHA256: boolean }).enableSHA256 = false;
  const { bucket } = config;
  // Links for clients are signed for the host they will send (Signature V4 covers it) by a second client that only
  // signs, never sends: its region is set, so presigning asks no server anything.
  let publicSigner = client;
  if (config.publicEndpoint) {
    const problem = s3EndpointProblem(config.publicEndpoint);
    if (problem) throw new Error(`publicEndpoint ${config.publicEndpoint} ${problem}`);
    publicSigner = new Client({ ...endpointOf(config.publicEndpoint), accessKey: config.accessKey, secretKey: config.secretKey, region, pathStyle: true });
  }

  const stat = async (key: string): Promise<ObjectStat | null> => {
    try {
      const s = await client.statObject(bucket, key);
      return {
        size: s.size,
        etag: cleanEtag(s.etag),
        contentType: (s.metaData['content-type'] as string | undefined) ?? undefined,
        lastModified: s.lastModified,
      };
    } catch (error) {
      if (isNotFoundError(error)) return null;
      throw error;
    }
  };

  const put = async (key: string, body: Readable | Buffer, options: PutOptions): Promise<{ etag: string }> => {
    const meta = { ...options.metadata, 'Content-Type': options.contentType };
    const info = await client.putObject(bucket, key, body, options.size, meta);
    let etag = cleanEtag(info.etag);
    // radosgw answers a multipart upload with an empty etag; the object's stat has it.
    if (!etag) etag = (await stat(key))?.etag ?? '';
    return { etag };
  };

  /** Parts in flight at once: the next part is read from the source while the previous ones upload. */
  const PARTS_IN_FLIGHT = 2;

  /**
   * A stream of unknown length: read into parts of `partSize`; a body smaller than one part is one plain PUT,
   * anything larger a multipart upload with two parts in flight, so reading the source (and whatever hashing the
   * caller does on the way) overlaps the store's writes. Unlike the minio client's own stream upload, no part is
   * hashed again (no Content-MD5) and no listing of open uploads precedes it. A failed upload is aborted.
   *
   * Parts are copied into at most three buffers of `partSize`, each filled again once its part is stored: a new buffer
   * for every part (Buffer.concat) was a GiB of fresh memory outside V8's heap for every GiB stored, and V8 answers
   * such memory with full collections of the whole heap (issue 33, bench/byte-cpu.bench.ts). A body smaller than one
   * part is still joined once, at its own size.
   */
  const putParts = async (key: string, body: Readable, options: PutOptions): Promise<{ etag: string }> => {
    const meta = { ...options.metadata, 'Content-Type': options.contentType };
    let uploadId: string | undefined;
    let partNumber = 0;
    let failure: unknown;
    const etags: Array<{ part: number; etag: string }> = [];
    const inflight = new Set<Promise<void>>();
    const spare: Buffer[] = [];
    const pending: Buffer[] = [];
    let pendingBytes = 0;
    /** The first `length` pending bytes copied into a part buffer (one freed by a stored part when there is one). */
    const take = (length: number): Buffer => {
      const part = spare.pop() ?? Buffer.allocUnsafeSlow(partSize);
      let filled = 0;
      while (filled < length) {
        const chunk = pending[0] as Buffer;
        const copied = chunk.copy(part, filled, 0, Math.min(chunk.length, length - filled));
        filled += copied;
        if (copied === chunk.length) pending.shift();
        else pending[0] = chunk.subarray(copied);
      }
      pendingBytes -= length;
      return part;
    };
    const send = async (buffer: Buffer, length: number) => {
      uploadId ??= await client.initiateNewMultipartUpload(bucket, key, meta);
      const n = (partNumber += 1);
      const id = uploadId;
      const p = client
        .uploadPart({ bucketName: bucket, objectName: key, uploadID: id, partNumber: n, headers: { 'Content-Length': length } }, buffer.subarray(0, length))
        .then((r) => void etags.push({ part: n, etag: r.etag }))
        .catch((error: unknown) => void (failure ??= error))
        .finally(() => {
          inflight.delete(p);
          // Its request is answered: nothing reads the buffer any more.
          spare.push(buffer);
        });
      inflight.add(p);
      while (inflight.size >= PARTS_IN_FLIGHT) await Promise.race(inflight);
      if (failure) throw failure;
    };
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        pending.push(chunk);
        pendingBytes += chunk.length;
        while (pendingBytes >= partSize) await send(take(partSize), partSize);
      }
      if (uploadId === undefined) {
        // Smaller than one part (or empty, which S3 refuses as a multipart upload): one PUT.
        return await put(key, Buffer.concat(pending, pendingBytes), { ...options, size: pendingBytes });
      }
      if (pendingBytes > 0) {
        const length = pendingBytes;
        await send(take(length), length);
      }
      await Promise.all(inflight);
      if (failure) throw failure;
      etags.sort((a, b) => a.part - b.part);
      const done = await client.completeMultipartUpload(bucket, key, uploadId, etags);
      const etag = cleanEtag(done.etag) || ((await stat(key))?.etag ?? '');
      return { etag };
    } catch (error) {
      await Promise.allSettled(inflight);
      if (uploadId !== undefined) await client.abortMultipartUpload(bucket, key, uploadId).catch(() => undefined);
      throw error;
    }
  };

  const presign = (signer: Client, key: string, expirySeconds: number, options: PresignOptions): Promise<string> => {
    const params: Record<string, string> = {};
    if (options.responseContentDisposition) params['response-content-disposition'] = options.responseContentDisposition;
    if (options.responseContentType) params['response-content-type'] = options.responseContentType;
    return signer.presignedGetObject(bucket, key, expirySeconds, params);
  };

  const notFoundAs =
    (key: string) =>
    (error: unknown): never => {
      if (isNotFoundError(error)) throw new ObjectNotFoundError(key);
      throw error;
    };

  /** CopyObject's limit: larger objects are copied as parts (UploadPartCopy) of `COPY_PART_BYTES`. */
  const copyLimit = config.maxSingleCopyBytes ?? 5 * 1024 ** 3;
  const copy = async (sourceKey: string, targetKey: string, options: CopyOptions): Promise<void> => {
    const source = await stat(sourceKey);
    if (!source) throw new ObjectNotFoundError(sourceKey);
    const replaced = options.metadata?.(source);
    const headers: Record<string, string> = {};
    if (replaced) {
      headers['Content-Type'] = replaced.contentType;
      if (replaced.contentDisposition) headers['Content-Disposition'] = replaced.contentDisposition;
    }
    const directive = replaced ? { MetadataDirective: 'REPLACE' as const, Headers: headers } : {};
    const from = `/${bucket}/${sourceKey.split('/').map(encodeURIComponent).join('/')}`;
    if (source.size <= copyLimit) {
      await client
        .copyObject(
          new CopySourceOptions({ Bucket: bucket, Object: sourceKey }),
          new CopyDestinationOptions({ Bucket: bucket, Object: targetKey, ...directive }),
        )
        .catch(notFoundAs(sourceKey));
      return;
    }
    // In parts: the new object's metadata is the upload's (the source's type unless replaced).
    const meta = replaced ? headers : { 'Content-Type': source.contentType ?? 'application/octet-stream' };
    const uploadId = await client.initiateNewMultipartUpload(bucket, targetKey, meta);
    try {
      const partBytes = Math.max(Math.ceil(source.size / 10_000), Math.min(copyLimit, COPY_PART_BYTES));
      const parts: Array<{ part: number; etag: string }> = [];
      for (let start = 0, part = 1; start < source.size; start += partBytes, part += 1) {
        const end = Math.min(start + partBytes, source.size) - 1;
        const copyHeaders = { 'x-amz-copy-source': from, 'x-amz-copy-source-range': `bytes=${start}-${end}` };
        const done = await client.uploadPart({ bucketName: bucket, objectName: targetKey, uploadID: uploadId, partNumber: part, headers: copyHeaders });
        parts.push({ part, etag: done.etag });
      }
      await client.completeMultipartUpload(bucket, targetKey, uploadId, parts);
    } catch (error) {
      await client.abortMultipartUpload(bucket, targetKey, uploadId).catch(() => undefined);
      throw error;
    }
  };

  const publicBase = (config.publicUrl ?? config.publicEndpoint ?? config.endpoint).replace(/\/$/, '');
  return {
    bucket,
    publicUrl: (key) => `${publicBase}/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`,
    async publishPrefix(prefix) {
      if (!prefix.endsWith('/')) throw new Error(`publishPrefix needs a folder ending in "/": ${prefix}`);
      const wanted = publicPrefixPolicy(bucket, prefix);
      const current = await client.getBucketPolicy(bucket).catch((error: unknown) => {
        // No policy yet: radosgw and AWS answer NoSuchBucketPolicy.
        if ((error as { code?: string }).code === 'NoSuchBucketPolicy') return '';
        throw error;
      });
      if (samePolicy(current, wanted)) return false;
      await client.setBucketPolicy(bucket, JSON.stringify(wanted));
      return true;
    },
    copy: (sourceKey, targetKey, options = {}) => copy(sourceKey, targetKey, options),
    client,
    async ensureBucket() {
      if (await client.bucketExists(bucket)) return;
      try {
        await client.makeBucket(bucket, region);
      } catch (error) {
        // Another instance created it meanwhile.
        const code = (error as { code?: string }).code;
        if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw error;
      }
    },
    putStream: (key, body, options) => putParts(key, body, options),
    putBuffer: (key, body, options) => put(key, body, { ...options, size: body.length }),
    getStream: (key) => client.getObject(bucket, key).catch(notFoundAs(key)),
    async getBuffer(key) {
      const chunks: Buffer[] = [];
      for await (const chunk of await client.getObject(bucket, key).catch(notFoundAs(key))) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    async getRange(key, start, endInclusive) {
      if (start < 0 || endInclusive < start) throw new RangeError(`bad range ${start}-${endInclusive}`);
      return client.getPartialObject(bucket, key, start, endInclusive - start + 1).catch(notFoundAs(key));
    },
    stat,
    async remove(key) {
      await client.removeObject(bucket, key).catch((error: unknown) => {
        if (!isNotFoundError(error)) throw error;
      });
    },
    async listKeys(prefix) {
      const keys: string[] = [];
      for await (const item of client.listObjectsV2(bucket, prefix, true)) if (item.name) keys.push(item.name);
      return keys.sort();
    },
    async removePrefix(prefix) {
      if (!prefix) throw new Error('removePrefix needs a non-empty prefix');
      let removed = 0;
      let batch: string[] = [];
      const flush = async () => {
        if (batch.length === 0) return;
        const results = await client.removeObjects(bucket, batch);
        const failed = results.filter((r) => r && r.Error && !NOT_FOUND_CODES.has(r.Error.Code ?? ''));
        if (failed.length > 0) throw new Error(`could not remove ${failed.length} objects under ${prefix}`);
        removed += batch.length;
        batch = [];
      };
      for await (const item of client.listObjectsV2(bucket, prefix, true)) {
        if (!item.name) continue;
        batch.push(item.name);
        if (batch.length === 1000) await flush();
      }
      await flush();
      return removed;
    },
    presignGet: (key, expirySeconds, options = {}) => presign(client, key, expirySeconds, options),
    presignPublicGet: (key, expirySeconds, options = {}) => presign(publicSigner, key, expirySeconds, options),
    async ping() {
      if (!(await client.bucketExists(bucket))) throw new Error(`bucket ${bucket} does not exist`);
    },
    reachable() {
      return this.ping().then(
        () => true,
        () => false,
      );
    },
  };
}
