import type { Principal } from '@dam/auth-tokens';
import { AppError, badRequest, notFound, validationFailed } from '@dam/errors';
import type { DeliveryTarget } from '@dam/internal-api';
import { contentDisposition, isActiveContentType } from '@dam/http';
import { deliveryError } from '../domain/delivery';
import { accessSecret, cdnUrl, resolveExpiry, signLink, transformPairs, type LinkParams, type LinkTransform } from '../domain/link-signature';
import type { ObjectReader, SuiteClients } from '../domain/ports';

export interface GetLinkDeps {
  clients: SuiteClients;
  storage: ObjectReader;
  /** `{cdn}` as clients reach it. */
  cdnBase: string;
  /** The first signs (the others only verify at the edge). */
  signingKeys: readonly Buffer[];
  now?: () => number;
}

export interface LinkOptions {
  key: string;
  link_type: 'cdn' | 'object_storage';
  delivery: 'display' | 'download';
  expiry: string;
  /** A `cdn` link's on-demand transform of an image key (CONTRACT §15); absent or empty: none. */
  transform?: LinkTransform;
}

type Made = { url: string; expires_at: string };
export type BulkLink = { id: string } & (Made | { error: { code: string; message: string } });

/** Conversions whose files a player or viewer reads one by one: only a `cdn` link (signed entries) serves them. */
const DESCRIPTOR = /\.(dzi|m3u8)$/;

export const assetNotFound = () => notFound('ASSET_NOT_FOUND', 'The asset does not exist');

const nowSeconds = (deps: GetLinkDeps) => Math.floor((deps.now?.() ?? Date.now()) / 1000);

const hasTransform = (o: LinkOptions) => transformPairs(o.transform).length > 0;

/** What is wrong with the request whatever the asset: the expiry, a transform on an object_storage link. */
function expiryOf(deps: GetLinkDeps, o: LinkOptions): number {
  if (o.link_type === 'object_storage' && hasTransform(o)) {
    throw validationFailed([{ path: 'link_type', message: 'a transform (w, h, fit, format, q) is served by a cdn link only' }]);
  }
  const r = resolveExpiry(o.expiry, o.link_type, nowSeconds(deps));
  if (!r.ok) throw validationFailed([{ path: 'expiry', message: r.message }]);
  return r.expiry;
}

async function make(deps: GetLinkDeps, target: DeliveryTarget, o: LinkOptions, expiry: number, accessId: () => Promise<string>): Promise<Made> {
  const expires_at = new Date(expiry * 1000).toISOString();
  if (o.link_type === 'cdn') {
    // A transform applies to one image: the original of an image or a static image conversion, not a video, a PDF
    // or the files of a multi-file conversion (deepzoom, hls-video, storyboard).
    const transform = hasTransform(o) ? o.transform : undefined;
    if (transform && (!target.content_type.startsWith('image/') || target.folder)) {
      throw badRequest('TRANSFORM_NOT_APPLICABLE', `"${o.key}" is not an image: a link transforms images only`);
    }
    const params: LinkParams = { key: o.key, expiry, delivery: o.delivery, accessId: await accessId(), ...(transform ? { transform } : {}) };
    const signature = signLink(accessSecret(deps.signingKeys[0] as Buffer, params.accessId), target.asset_id, params);
    // A Deep Zoom viewer finds the tiles next to the descriptor's own path, so its link names the file.
    const file = o.key === 'deepzoom' && target.folder ? target.object_key.slice(target.folder.length) : undefined;
    return { url: cdnUrl(deps.cdnBase, target.asset_id, params, signature, file), expires_at };
  }
  if (target.folder && DESCRIPTOR.test(target.object_key)) {
    throw badRequest('LINK_TYPE_NOT_APPLICABLE', `"${o.key}" is made of many files: only a cdn link serves it`);
  }
  const inline = o.delivery === 'display' && !isActiveContentType(target.content_type);
  // Signed for S3_PUBLIC_ENDPOINT, the address the client will send: the signature covers the host.
  const url = await deps.storage.presignPublicGet(target.object_key, expiry - nowSeconds(deps), {
    responseContentDisposition: contentDisposition(inline ? 'inline' : 'attachment', target.file_name),
    responseContentType: target.content_type,
  });
  return { url, expires_at };
}

/** The caller's accessID, asked of auth once per request and only when a cdn link needs it. */
const accessIdFor = (deps: GetLinkDeps, principal: Principal) => {
  let id: Promise<string> | undefined;
  return () => (id ??= deps.clients.accessIdOf(principal));
};

/** Get Link of one asset (endpoint 16, CONTRACT §7 and §11). */
export async function getLink(deps: GetLinkDeps, principal: Principal, id: string, o: LinkOptions): Promise<{ id: string } & Made> {
  const expiry = expiryOf(deps, o);
  const [item] = await deps.clients.delivery(principal, [id], o.key);
  if (!item) throw assetNotFound();
  if ('error' in item) throw deliveryError(item.error);
  return { id: item.id, ...(await make(deps, item.target, o, expiry, accessIdFor(deps, principal))) };
}

/** Get Link of many assets: each id its link or its error (a bad request about one asset does not fail the others). */
export async function getLinks(deps: GetLinkDeps, principal: Principal, ids: readonly string[], o: LinkOptions): Promise<BulkLink[]> {
  const expiry = expiryOf(deps, o);
  const items = await deps.clients.delivery(principal, ids, o.key);
  const accessId = accessIdFor(deps, principal);
  const links: BulkLink[] = [];
  for (const item of items) {
    if ('error' in item) {
      links.push({ id: item.id, error: { code: item.error.code, message: item.error.message } });
      continue;
    }
    try {
      links.push({ id: item.id, ...(await make(deps, item.target, o, expiry, accessId)) });
    } catch (error) {
      if (!(error instanceof AppError) || error.kind !== 'BAD_REQUEST') throw error;
      links.push({ id: item.id, error: { code: error.code, message: error.message } });
    }
  }
  return links;
}
