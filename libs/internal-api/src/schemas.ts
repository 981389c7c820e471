import { z } from 'zod';

/**
 * Requests and answers of the suite's internal routes (docs/internal-interfaces.md), defined once: the
 * receiving route validates with them and the calling client parses the answer with them.
 */

/** A principal as auth's `POST /internal/v1/authenticate` answers it for an API key. */
export const principalSchema = z.object({
  user_id: z.number().int().positive(),
  group_id: z.number().int().positive(),
  role_id: z.number().int().positive(),
  role_name: z.string().min(1),
  permissions: z.array(z.string()),
  via: z.enum(['jwt', 'api_key', 'upload_key']),
  key_id: z.string().optional(),
  key_role: z.string().optional(),
});

/**
 * auth `POST /internal/v1/authenticate` (callers: gateway, upload): an API key, or a user's upload key (CONTRACT
 * §12, only upload asks with one): exactly one of the two.
 */
export const authenticateRequest = z.union([
  z.object({ api_key: z.string().min(1).max(512) }).strict(),
  z.object({ upload_key: z.string().min(1).max(512) }).strict(),
]);
export const authenticateResponse = principalSchema;

/** auth `GET /internal/v1/groups/:group_id/users/:user_id/status` (callers: gateway, upload); 404 = gone. */
export const userStatusResponse = z.object({
  active: z.boolean(),
  role_id: z.number().int().positive(),
  /** JWTs with an older `ep` are revoked; absent from an older auth (no revocation then). */
  token_epoch: z.number().int().min(0).optional(),
  /** The user's current `accessID` (signed links); absent from an older auth. */
  access_id: z.string().optional(),
});
export type UserStatus = z.infer<typeof userStatusResponse>;

/** auth `GET /internal/v1/access/:access_id` (caller: link-signing): whose signed links these are; 404 = no such id. */
export const accessOwnerResponse = z.object({
  user_id: z.number().int().positive(),
  group_id: z.number().int().positive(),
  role_id: z.number().int().positive(),
  active: z.boolean(),
});
export type AccessOwner = z.infer<typeof accessOwnerResponse>;

/**
 * auth `GET /internal/v1/access_id` (caller: link-signing, for the user asking for a link): the accessID its `cdn`
 * links carry, the user's own when signed in, the key's when the caller is an API key (revoking it ends them).
 */
export const accessIdResponse = z.object({ access_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });
export type AccessIdAnswer = z.infer<typeof accessIdResponse>;

/** metadata `POST /internal/v1/assets` (caller: upload, for the uploader): the created records (asset data). */
export const createAssetsResponse = z.object({ assets: z.array(z.looseObject({ id: z.string(), status: z.string() })) });

/** metadata `POST /internal/v1/assets/exists` (callers: upload, auth; for a user of the group). */
export const assetsExistRequest = z.object({
  ids: z
    .array(z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters'))
    .min(1)
    .max(1000),
  /** Object keys to check: those that are an asset's current original come back in `live_keys`. */
  object_keys: z.array(z.string().min(1).max(1024)).max(1000).optional(),
});
export const assetsExistResponse = z.object({ existing: z.array(z.string()), live_keys: z.array(z.string()).default([]) });

/** An original that upload stored, as it registers it with metadata (upload, replace). */
export const storedFile = z.object({
  id: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters'),
  name: z.string().min(1).max(1024),
  size: z.number().int().nonnegative(),
  checksum: z.string().regex(/^[a-f0-9]{32}$/, 'must be an MD5 hex digest'),
  content_type: z.string().min(1).max(255),
  object_key: z.string().min(1).max(1024),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export type StoredFile = z.infer<typeof storedFile>;

/** metadata `POST /internal/v1/assets/:id/original` (caller: upload, for a user): Replace Asset Content. */
export const replaceOriginalRequest = storedFile.omit({ id: true }).extend({ custom_metadata: z.unknown().optional() });
/** metadata `POST /internal/v1/assets/ingest` (caller: upload, for a user): Ingest from URI. */
export const ingestRequest = z.object({
  id: z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters'),
  name: z.string().min(1).max(1024),
  source: z.string().min(1).max(8192),
  refused: z.string().min(1).max(2000).optional(),
});
export const ingestResponse = z.object({ id: z.string(), status: z.enum(['QUEUED', 'ERROR']), message: z.string() });

/** How an on-demand transform fits the image into `w` x `h` (sharp's fits; `outside` is a signed link's, CONTRACT §15). */
export const TRANSFORM_FITS = ['cover', 'contain', 'inside', 'outside', 'fill'] as const;
/** The formats a transform writes. */
export const TRANSFORM_FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const;
export type TransformFormat = (typeof TRANSFORM_FORMATS)[number];

/** On-demand image transform parameters (CONTRACT §5, §15), `format` already resolved (no `auto`). */
export const transformParams = z.object({
  w: z.number().int().min(1).max(8192).optional(),
  h: z.number().int().min(1).max(8192).optional(),
  fit: z.enum(TRANSFORM_FITS).optional(),
  format: z.enum(TRANSFORM_FORMATS),
  q: z.number().int().min(1).max(100).optional(),
});
export type TransformParams = z.infer<typeof transformParams>;

/** conversion `POST /internal/v1/transforms` (caller: metadata): make `cache_key` from `source_key` unless it exists. */
export const transformRequest = z.object({
  source_key: z.string().regex(/^(originals|conversions)\/[^\s]+$/, 'must be an original or a conversion'),
  cache_key: z.string().regex(/^conversions\/[^/]+\/[^/]+\/[^/]+\/_t\/[a-f0-9]{32}\.[a-z]+$/, 'must be a transform cache key'),
  params: transformParams,
});
export const transformResponse = z.object({
  object_key: z.string(),
  content_type: z.string(),
  size: z.number().int().nonnegative(),
  /** Whether this call made it (false: it was in the cache, or another identical request made it). */
  made: z.boolean(),
});

export const replaceOriginalResponse = z.object({ asset: z.object({ id: z.string(), status: z.string() }) });

/** auth `GET /internal/v1/groups/:group_id/settings` (caller: conversion): the record, read by each worker for its part. */
export const groupSettingsResponse = z.looseObject({});

/**
 * metadata `POST /internal/v1/assets/delivery` (caller: link-signing, for the user behind a link): where the bytes of
 * one key of each asset are, checked as Download checks them (the user may read the asset, it is not in the trash,
 * it has the key). Multi-file conversions name their folder and the file read at the key itself.
 */
export const deliveryRequest = z
  .object({
    ids: z.array(z.string().min(1).max(64)).min(1).max(100),
    key: z.string().min(1).max(64),
    /**
     * The edge serving a signed link with a transform (CONTRACT §15): the target is then the transformed image, made
     * once (conversion, bounded there) and kept in storage like Get Conversion's. `format` absent: the source's own
     * where a transform can write it, else JPEG (the edge has resolved `auto` from the request's Accept already).
     */
    transform: transformParams.partial({ format: true }).optional(),
  })
  .refine((r) => r.transform === undefined || r.ids.length === 1, { message: 'a transform is asked for one asset at a time', path: ['ids'] });
export type DeliveryRequest = z.infer<typeof deliveryRequest>;
export type DeliveryTransform = NonNullable<DeliveryRequest['transform']>;
export const deliveryTarget = z.object({
  group_id: z.number().int().positive(),
  asset_id: z.string(),
  object_key: z.string().min(1),
  content_type: z.string().min(1),
  file_name: z.string(),
  /** Known for originals (the record's MD5 and size); a conversion's come from the object store. */
  size: z.number().int().nonnegative().optional(),
  etag: z.string().optional(),
  /** Multi-file conversions (deepzoom, hls-video, storyboard): the folder every file of the key is under. */
  folder: z.string().optional(),
  /** A transform's target: the object it was made from (the key's own), so that a purge of that key reaches it. */
  source_object_key: z.string().min(1).optional(),
});
export type DeliveryTarget = z.infer<typeof deliveryTarget>;
export const deliveryResponse = z.object({
  items: z.array(
    z.union([
      z.object({ id: z.string(), target: deliveryTarget }),
      z.object({ id: z.string(), error: z.object({ status: z.number().int(), code: z.string(), message: z.string() }) }),
    ]),
  ),
});
export type DeliveryResponse = z.infer<typeof deliveryResponse>;

export const INTERNAL_PATHS = {
  delivery: '/internal/v1/assets/delivery',
  authenticate: '/internal/v1/authenticate',
  accessOwner: (accessId: string) => `/internal/v1/access/${encodeURIComponent(accessId)}`,
  accessIdOfCaller: '/internal/v1/access_id',
  userStatus: (groupId: number | string, userId: number | string) => `/internal/v1/groups/${groupId}/users/${userId}/status`,
  groupSettings: (groupId: number | string) => `/internal/v1/groups/${encodeURIComponent(String(groupId))}/settings`,
  assets: '/internal/v1/assets',
  assetsExist: '/internal/v1/assets/exists',
  /** GET: 204 when the principal may replace the asset's original, else the error Replace would answer. */
  replaceable: (assetId: string) => `/internal/v1/assets/${encodeURIComponent(assetId)}/replaceable`,
  replaceOriginal: (assetId: string) => `/internal/v1/assets/${encodeURIComponent(assetId)}/original`,
  ingest: '/internal/v1/assets/ingest',
  transforms: '/internal/v1/transforms',
  /** GET (transcode): where a live asset's original is, e.g. the group's watermark image. */
  assetSource: (groupId: number | string, assetId: string) =>
    `/internal/v1/groups/${encodeURIComponent(String(groupId))}/assets/${encodeURIComponent(assetId)}/source`,
} as const;

/** A live asset's original as workers read it: its object key, type and checksum. */
export const assetSourceResponse = z.object({
  object_key: z.string().min(1),
  content_type: z.string().min(1),
  checksum: z.string(),
});
export type AssetSource = z.infer<typeof assetSourceResponse>;
