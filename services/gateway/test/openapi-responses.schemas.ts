import { z } from 'zod';
import { API_KEY_ROLES, ROLE_NAMES } from '@dam/auth-tokens';
import { ASSET_EVENT_TYPES, assetDataSchema } from '@dam/events';
import type { ErrorBody } from '@dam/http';
import type { ApiKeyView } from '../../auth/src/domain/api-keys';
import type { Settings } from '../../auth/src/domain/settings';
import type { UserView } from '../../auth/src/domain/users';
import type { UsageSeries } from '../../auth/src/adapters/usage.repository';
import type { LoginResult } from '../../auth/src/use-cases/login.use-case';
import type { AssetSchemaView } from '../../metadata/src/domain/asset-schema';
import type { CollectionAssetView, CollectionView } from '../../metadata/src/domain/collection';
import type { AddedConversion, deleteCustomConversion } from '../../metadata/src/use-cases/custom-conversion.use-case';
import { JOB_STATUSES, JOB_TYPES, type JobView } from '../../metadata/src/domain/job';
import type { setPublicAccess } from '../../metadata/src/use-cases/public-access.use-case';
import type { BulkDeleteAccepted, DeleteResult } from '../../metadata/src/use-cases/trash.use-case';
import type { UpdateDataResult } from '../../metadata/src/use-cases/update-data.use-case';
import type { UploadResult } from '../../upload/src/use-cases/upload-assets.use-case';
import type { DeliveryView } from '../../webhook/src/domain/delivery';

/**
 * Zod schemas of answers that have none in the services, each written from the TypeScript type its serializer
 * returns and held to that type by `TYPES_MATCH` below (`pnpm typecheck` fails when a field is added, removed or
 * retyped on either side). Answers built inline without a type (links, search pages, validate, group, similar)
 * are written from the CONTRACT section that defines them. Answers that do have a zod schema (asset data, ingest) are imported where they are used.
 */

const isoTime = z.iso.datetime({ offset: true });
const count = z.number().int().nonnegative();

/**
 * A member the TypeScript type leaves wide (`number`, `string`) whose values the database or the code keep to a
 * known set: the set goes into the JSON Schema (compared with the document), the type stays the serializer's.
 */
const within = <T extends z.ZodType>(schema: T, values: readonly unknown[]): T => schema.meta({ enum: [...values] });
/** users.role_id: CHECK (role_id BETWEEN 1 AND 4); role_name is ROLE_NAMES of it. */
const roleId = within(z.number().int(), [1, 2, 3, 4]);
const roleName = within(z.string(), Object.values(ROLE_NAMES));

/** CONTRACT §1, `ErrorBody` of libs/http. */
export const errorBody = z.object({
  error: z.object({
    code: z.string().regex(/^[A-Z][A-Z0-9_]*$/),
    message: z.string(),
    details: z.unknown().optional(),
    error_id: z.string().optional(),
  }),
});
/** CONTRACT §1: what a validation failure's `details` holds. */
export const errorDetails = z.array(z.object({ path: z.string(), message: z.string() }));

const jobStep = z.object({ name: z.string(), status: z.enum(JOB_STATUSES), started_at: isoTime.nullable(), finished_at: isoTime.nullable() });
export const jobView = z.object({
  job_id: z.number().int(),
  type: z.enum(JOB_TYPES),
  status: z.enum(JOB_STATUSES),
  asset_ids: z.array(z.string()),
  steps: z.array(jobStep),
  progress: z.number().int().min(0).max(100),
  created_at: isoTime,
  updated_at: isoTime,
  error: z.string().nullable(),
  skipped: z.record(z.string(), z.string()).optional(),
  /** A bulk delete that keeps its data export (jobs.routes.ts viewOf). */
  export_url: z.string().optional(),
});
/**
 * 202 of process, addons, purge, CDN jobs and reissue: `{job_id: job.id, status: job.status}` of a job `jobs.create`
 * has just inserted (the column's default, QUEUED).
 */
export const jobAccepted = z.object({ job_id: z.number().int(), status: z.literal('QUEUED') });

export const collectionView = z.object({
  collection_id: z.string(),
  name: z.string(),
  shared: z.boolean(),
  owner_id: z.number().int(),
  asset_count: count,
  created_at: isoTime,
});
const collectionAsset = z.object({ id: z.string(), name: z.string(), size: count, content_type: z.string(), status: z.string(), upload_time: isoTime });

/** `{items, page, page_size, total}` (CONTRACT §11); page and page_size as the query validated them. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), page: z.number().int().min(1), page_size: z.number().int().min(1).max(100), total: count });
export const collectionPage = collectionView.extend(pageOf(collectionAsset).shape);

export const userView = z.object({
  user_id: z.number().int(),
  email: z.string(),
  username: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  role_id: roleId,
  role_name: roleName,
  disabled: z.boolean(),
  created_at: isoTime,
});
/** `GET /api/v1/users/me`: `{...toUserView(user), group_id, permissions, preferences}`. */
export const me = userView.extend({ group_id: z.number().int(), permissions: z.array(z.string()), preferences: z.record(z.string(), z.unknown()) });

export const loginResult = z.object({
  user_id: z.number().int(),
  user_email: z.string(),
  username: z.string(),
  jwt: z.string(),
  role_id: roleId,
  role_name: roleName,
  permissions: z.array(z.string()),
  uploadkey: z.string(),
  accessID: z.string(),
  preferences: z.record(z.string(), z.unknown()),
  notifications: z.array(z.string()),
});

export const apiKeyView = z.object({ key_id: z.string(), name: z.string(), role: z.enum(API_KEY_ROLES), created_by: z.number().int(), created_at: isoTime });
/** 201 of `POST /api/v1/api_keys` (CONTRACT §2). */
export const apiKeyCreated = z.object({ key_id: z.string(), name: z.string(), role: z.enum(API_KEY_ROLES), key: z.string() });

const customConversion = z.object({
  width: z.number().int().min(1).max(8192).optional(),
  height: z.number().int().min(1).max(8192).optional(),
  fit: z.enum(['cover', 'contain', 'inside', 'fill']),
  format: z.enum(['jpeg', 'png', 'webp', 'avif']),
  quality: z.number().int().min(1).max(100),
});
const keyLists = z.object({ image: z.array(z.string()), video: z.array(z.string()) });
export const settings = z.object({
  webhooks: z.object({ urls: z.array(z.url()), secret: z.string(), previous_secret: z.string().optional(), previous_secret_expires_at: isoTime.optional() }),
  conversions: z.object({ custom: z.record(z.string(), customConversion), profile: keyLists, watermark_asset_id: z.string().nullable() }),
  addons: z.object({ auto: keyLists }),
  bulk_delete: z.object({ max_assets: z.number().int(), max_range_days: z.number().int(), export: z.boolean() }),
  metadata: z.object({ keep_gps: z.boolean() }),
});

export const assetSchemaView = z.object({
  schema_id: z.number().int(),
  name: z.string(),
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]),
  service_properties: z.record(z.string(), z.unknown()),
  created_at: isoTime,
  updated_at: isoTime,
});

export const deleteResult = z.object({ id: z.string(), keys: z.array(z.string()), status: z.literal('OK') });
export const bulkDeleteAccepted = z.object({ status: z.literal('QUEUED'), message: z.string(), job_id: z.number().int() });
export const addedConversion = z.object({
  key: z.string(),
  width: z.number().int().nullable(),
  height: z.number().int().nullable(),
  size: count,
  content_type: z.string(),
});
export const conversionDeleted = z.object({ id: z.string(), deleted: z.array(z.string()) });
export const publicAccess = z.object({ id: z.string(), public: z.record(z.string(), z.literal(true)) });

export const uploadResult = z.object({
  files: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      size: count,
      checksum: z.string(),
      content_type: z.string(),
      metadata: z.record(z.string(), z.unknown()),
      status: z.literal('NOT_READY'),
    }),
  ),
  success: z.literal(true),
  provider: z.literal('local'),
});

export const deliveryView = z.object({
  id: z.number().int(),
  webhook_id: z.string(),
  event: within(z.string(), ASSET_EVENT_TYPES),
  asset_id: z.string(),
  url: z.string(),
  /** deliveries.status: CHECK (status IN ('pending', 'delivered', 'failed')). */
  status: within(z.string(), ['pending', 'delivered', 'failed']),
  attempt_count: z.number().int(),
  response_code: z.number().int().nullable(),
  error: z.string().nullable(),
  next_retry_at: isoTime.nullable(),
  reissue_job_id: z.number().int().nullable(),
  created_at: isoTime,
  finished_at: isoTime.nullable(),
  attempts: z.array(
    z.object({
      attempt: z.number().int(),
      at: isoTime,
      response_code: z.number().int().nullable(),
      error: z.string().nullable(),
      duration_ms: z.number().int(),
    }),
  ),
});

const usageSeries = z.object({ series: z.array(z.object({ start: isoTime, value: z.number() })), total: z.number() });
/** `GET /api/v1/usage/{metric}`: `{metric, from, to, period, ...series}`. */
export const usage = usageSeries.extend({ metric: z.string(), from: isoTime, to: isoTime, period: z.enum(['1h', '24h', '7d']) });

/** CONTRACT §7: single Get Link; the bulk form's entries are the link or the id's error. */
export const link = z.object({ id: z.string(), key: z.string(), link_type: z.enum(['cdn', 'object_storage']), url: z.url(), expires_at: isoTime });
export const links = z.object({
  links: z.array(
    z.union([
      z.object({ id: z.string(), url: z.url(), expires_at: isoTime }),
      z.object({ id: z.string(), error: z.object({ code: z.string(), message: z.string() }) }),
    ]),
  ),
});

/** CONTRACT §8: a page of a stored result; `results` are short hits, or the asset data plus `score` when `extended`. */
const searchHit = z.object({
  id: z.string(),
  name: z.string(),
  size: count,
  content_type: z.string(),
  status: z.string(),
  upload_time: isoTime,
  score: z.number(),
});
export const searchPage = z.object({
  search_result_id: z.string().regex(/^[0-9a-f]{32}$/),
  page: z.number().int().min(1),
  pages: z.number().int().min(1),
  page_size: z.number().int().min(1).max(100),
  total: count.max(10_000),
  total_is_capped: z.boolean(),
  results: z.array(z.union([searchHit, assetDataSchema.extend({ score: z.number() })])),
  facets: z.record(z.string(), z.array(z.object({ value: z.unknown(), count }))),
});

/** 202 of Update Data: queued behind another update, or `async=1`. */
export const dataUpdateQueued = z.object({ id: z.string(), status: z.literal('QUEUED'), message: z.string() });

/** CONTRACT §2: Validate JWT and Create Group; CONTRACT §14: near-duplicates. */
export const validateResult = z.object({ valid: z.literal(true), user_id: z.number().int(), group_id: z.number().int(), role_id: roleId, expires_at: isoTime });
export const groupCreated = z.object({ group_id: z.number().int(), name: z.string(), admin_user_id: z.number().int() });
/** Small answers the routes build inline (`res.json({...})`), as they build them. */
export const userDeleted = z.object({ user_id: z.number().int(), deleted: z.literal(true) });
export const apiKeyRevoked = z.object({ key_id: z.string(), revoked: z.literal(true) });
export const accessIdRotated = z.object({ user_id: z.number().int(), accessID: z.string() });
export const uploadKeyRotated = z.object({ uploadkey: z.string() });
export const preferences = z.object({ preferences: z.record(z.string(), z.unknown()) });
export const collectionDeleted = z.object({ collection_id: z.string(), deleted: z.literal(true) });
export const similar = z.object({ items: z.array(z.object({ id: z.string(), distance: z.number().int().min(0).max(64) })) });

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Out<S extends z.ZodType> = z.output<S>;

/** Each schema above has exactly the type its serializer returns: a `false` here fails `pnpm typecheck`. */
export const TYPES_MATCH: [
  Equal<Out<typeof errorBody>, ErrorBody>,
  Equal<Out<typeof jobView>, JobView>,
  Equal<Out<typeof collectionView>, CollectionView>,
  Equal<Out<typeof collectionAsset>, CollectionAssetView>,
  Equal<Out<typeof userView>, UserView>,
  Equal<Out<typeof loginResult>, LoginResult>,
  Equal<Out<typeof apiKeyView>, ApiKeyView>,
  Equal<Out<typeof settings>, Settings>,
  Equal<Out<typeof assetSchemaView>, AssetSchemaView>,
  Equal<Out<typeof deleteResult>, DeleteResult>,
  Equal<Out<typeof bulkDeleteAccepted>, BulkDeleteAccepted>,
  Equal<Out<typeof addedConversion>, AddedConversion>,
  Equal<Out<typeof conversionDeleted>, Awaited<ReturnType<typeof deleteCustomConversion>>>,
  Equal<Out<typeof publicAccess>, Awaited<ReturnType<typeof setPublicAccess>>>,
  Equal<Out<typeof uploadResult>, UploadResult>,
  Equal<Out<typeof deliveryView>, DeliveryView>,
  Equal<Out<typeof usageSeries>, UsageSeries>,
  Equal<Out<typeof dataUpdateQueued>, Extract<UpdateDataResult, { queued: unknown }>['queued']>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];
