import { forbidden, notFound, payloadTooLarge } from '@dam/errors';
import type { DeliveryTarget, DeliveryTransform, TransformFormat } from '@dam/internal-api';
import { contentTypeOfFile, isNotFoundError, ObjectNotFoundError } from '@dam/storage';
import { deliveryError, principalOfOwner } from '../domain/delivery';
import { accessSecret, cdnUrl, linkOf, verifyLink, type LinkTransform } from '../domain/link-signature';
import { rewritePlaylist } from '../domain/playlist';
import type { ObjectReader, SuiteClients, UsageCounter } from '../domain/ports';

export interface ServeDeliveryDeps {
  clients: SuiteClients;
  storage: ObjectReader;
  usage: UsageCounter;
  cdnBase: string;
  /** Every key that verifies links (the first also signs playlist entries). */
  signingKeys: readonly Buffer[];
  now?: () => number;
}

/** A request at the edge: the asset, the file inside a multi-file conversion (path segments), the link's query. */
export interface EdgeRequest {
  assetId: string;
  segments: readonly string[];
  query: Readonly<Record<string, unknown>>;
  /** The request's Accept: what `format=auto` answers (CONTRACT §15). */
  accept?: string;
}

/** One stored file to serve, its size and ETag known. */
export interface ServedFile {
  target: DeliveryTarget;
  objectKey: string;
  contentType: string;
  name: string;
  /** The file's path inside its conversion's folder (files of multi-file conversions only). */
  relative?: string;
  delivery: 'display' | 'download';
  size: number;
  etag: string;
  /** The bytes depend on the request's Accept (`format=auto`): the answer says `Vary: Accept`. */
  varyAccept?: boolean;
  /** The object's Last-Modified when the store was asked (the edge asks for an original's, whose record has none). */
  lastModified?: Date;
}

/** What the edge answers: a playlist with every entry signed, or a stored object's bytes. `count` meters the bytes sent. */
export type Delivery =
  | { kind: 'playlist'; body: Buffer; contentType: string; count: (bytes: number) => void }
  | { kind: 'object'; file: ServedFile; count: (bytes: number) => void };

const ASSET_ID = /^[A-Za-z0-9]{1,64}$/;
const FILE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** Playlists are rewritten in memory: a larger one is not a playlist this suite made. */
export const PLAYLIST_MAX_BYTES = 1024 * 1024;

export const contentMissing = () => notFound('CONTENT_NOT_FOUND', 'The stored content is missing');
export const isMissing = (error: unknown): boolean => error instanceof ObjectNotFoundError || isNotFoundError(error);

/**
 * `{cdn}/api/v1/files/content/<asset_id>[/<file>]?key&expiry&delivery&accessId[&w&h&fit&format&q]&signature`: checks
 * the signature (any active key; a transform's parameters are signed too), the expiry, and that the accessID's user
 * is still active and may still read the asset (a trashed or deleted asset, a key it no longer has, is metadata's
 * refusal), then says which file to serve. Files of
 * multi-file conversions are named after the asset id; playlists come back with every entry signed. A link with a
 * transform serves the transformed image, made once by conversion (through metadata) and then an object like any.
 */
export async function serveDelivery(deps: ServeDeliveryDeps, req: EdgeRequest): Promise<Delivery> {
  const { assetId: id, segments } = req;
  if (!ASSET_ID.test(id) || segments.length > 6 || !segments.every((s) => FILE_SEGMENT.test(s))) throw notFound('CONTENT_NOT_FOUND', 'No such content');
  const { params, signature } = linkOf(req.query);
  if (
    !verifyLink(
      deps.signingKeys.map((k) => accessSecret(k, params.accessId)),
      id,
      params,
      signature,
    )
  ) {
    throw forbidden('The link signature does not match', 'SIGNATURE_INVALID');
  }
  if (params.expiry < Math.floor((deps.now?.() ?? Date.now()) / 1000)) throw forbidden('The link has expired', 'LINK_EXPIRED');
  const owner = await deps.clients.accessOwner(params.accessId);
  if (!owner || !owner.active) throw forbidden('The link was revoked', 'ACCESS_REVOKED');
  const transform = params.transform ? deliveryTransform(params.transform, req.accept) : undefined;
  const [item] = await deps.clients.delivery(principalOfOwner(owner), [id], params.key, transform);
  if (!item) throw notFound('ASSET_NOT_FOUND', 'The asset does not exist');
  if ('error' in item) throw deliveryError(item.error);
  const target = item.target;
  let file: { objectKey: string; contentType: string; name: string; relative?: string };
  if (segments.length > 0) {
    if (!target.folder) throw notFound('CONTENT_NOT_FOUND', `"${params.key}" is a single file`);
    const relative = segments.join('/');
    file = { objectKey: `${target.folder}${relative}`, contentType: contentTypeOfFile(relative), name: segments[segments.length - 1] as string, relative };
  } else if (target.folder) {
    file = { objectKey: target.object_key, contentType: target.content_type, name: target.file_name, relative: target.object_key.slice(target.folder.length) };
  } else {
    file = { objectKey: target.object_key, contentType: target.content_type, name: target.file_name };
  }
  const count = (n: number) => deps.usage.add(owner.group_id, owner.user_id, n);

  if (file.relative?.endsWith('.m3u8')) {
    const text = await readSmall(deps.storage, file.objectKey);
    const body = Buffer.from(rewritePlaylist(text, file.relative, (f) => cdnUrl(deps.cdnBase, id, params, signature, f)));
    return { kind: 'playlist', body, contentType: file.contentType, count };
  }
  // The record knows an original's size and MD5; any other file is asked of the object store.
  let size = file.relative === undefined ? target.size : undefined;
  let etag = file.relative === undefined ? target.etag : undefined;
  let lastModified: Date | undefined;
  if (size === undefined || etag === undefined) {
    const stat = await deps.storage.stat(file.objectKey);
    if (!stat) throw contentMissing();
    ({ size, etag, lastModified } = stat);
  }
  const varyAccept = params.transform?.format === 'auto' ? { varyAccept: true } : {};
  return { kind: 'object', file: { target, ...file, delivery: params.delivery, size, etag, ...(lastModified ? { lastModified } : {}), ...varyAccept }, count };
}

/** Whether Accept names `type` itself with a quality above 0 (a wildcard does not say the client decodes AVIF). */
export function accepts(accept: string | undefined, type: string): boolean {
  if (!accept) return false;
  return accept.split(',').some((entry) => {
    const [media, ...options] = entry.split(';').map((p) => p.trim().toLowerCase());
    if (media !== type) return false;
    const q = options.find((o) => o.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * A signed link's `format=auto` (CONTRACT §15): AVIF when the request accepts it, else WebP, else the source's own
 * format (no format: metadata keeps the source's where a transform can write it). Get Conversion's `auto` (§5)
 * falls back to JPEG instead; each follows its own text.
 */
export function edgeFormat(asked: LinkTransform['format'], accept: string | undefined): TransformFormat | undefined {
  if (asked !== 'auto') return asked;
  if (accepts(accept, 'image/avif')) return 'avif';
  if (accepts(accept, 'image/webp')) return 'webp';
  return undefined;
}

function deliveryTransform(t: LinkTransform, accept: string | undefined): DeliveryTransform {
  const format = edgeFormat(t.format, accept);
  return {
    ...(t.w !== undefined ? { w: t.w } : {}),
    ...(t.h !== undefined ? { h: t.h } : {}),
    ...(t.fit !== undefined ? { fit: t.fit } : {}),
    ...(format !== undefined ? { format } : {}),
    ...(t.q !== undefined ? { q: t.q } : {}),
  };
}

async function readSmall(storage: ObjectReader, objectKey: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of await storage.getStream(objectKey)) {
      size += (chunk as Buffer).length;
      if (size > PLAYLIST_MAX_BYTES) throw payloadTooLarge('The playlist is too large');
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (isMissing(error)) throw contentMissing();
    throw error;
  }
  return Buffer.concat(chunks).toString('utf8');
}
