import { z } from 'zod';
import { assetDataSchema } from '@dam/events';
import { ingestResponse } from '../../../libs/internal-api/src/schemas';
import { createSchemas as apiKeyCreate, deleteSchemas as apiKeyDelete, listSchemas as apiKeyList } from '../../auth/src/http/api-keys.routes';
import { createSchemas as groupCreate } from '../../auth/src/http/groups.routes';
import { loginSchemas } from '../../auth/src/http/login.routes';
import { pageQuery, userIdParams } from '../../auth/src/http/schemas';
import { accessIdSchemas, createSchemas as userCreate, patchSchemas as userPatch, preferencesSchemas } from '../../auth/src/http/users.routes';
import { patchSchemas as settingsPatch } from '../../auth/src/http/settings.routes';
import { usageSchemas } from '../../auth/src/http/usage.routes';
import { bulk as linksBulk, single as linkSingle } from '../../link-signing/src/http/links.routes';
import { customMetadataSchema } from '../../metadata/src/domain/custom-metadata';
import { addonReadSchemas, addonRunSchemas } from '../../metadata/src/http/addons.routes';
import { assetDataSchemas, similarSchemas } from '../../metadata/src/http/asset-data.routes';
import { cdnJobSchemas } from '../../metadata/src/http/cdn-jobs.routes';
import {
  collectionCreateSchemas,
  collectionDeleteSchemas,
  collectionListSchemas,
  collectionMembersSchemas,
  collectionOneSchemas,
  collectionPatchSchemas,
} from '../../metadata/src/http/collections.routes';
import { conversionSchemas } from '../../metadata/src/http/conversions.routes';
import { dataUpdateSchemas } from '../../metadata/src/http/data-update.routes';
import { downloadSchemas, getConversionSchemas } from '../../metadata/src/http/download.routes';
import { jobListSchemas, jobSchemas } from '../../metadata/src/http/jobs.routes';
import { processSchemas } from '../../metadata/src/http/process.routes';
import { publicAccessSchemas } from '../../metadata/src/http/public-access.routes';
import { reissueSchemas } from '../../metadata/src/http/reissue.routes';
import { schemaCreateSchemas, schemaListSchemas, schemaOneSchemas, schemaUpdateSchemas } from '../../metadata/src/http/schemas.routes';
import { bulkDeleteSchemas, keysSchemas } from '../../metadata/src/http/trash.routes';
import { searchBodySchemas, searchPageSchemas } from '../../search/src/http/search.routes';
import { ingestSchemas } from '../../upload/src/http/upload.routes';
import { deliverySchemas } from '../../webhook/src/http/deliveries.routes';
import * as r from './openapi-responses.schemas';

export interface RequestSchemas {
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
}

export interface RouteEntry {
  /** The express path the service registers (`:id`), aligned segment by segment with the document's path. */
  route: string;
  schemas: RequestSchemas;
}

/**
 * Every public route whose handler validates with zod: `METHOD <path in docs/openapi.yaml>` → the express path
 * and the very schema objects passed to `validate()` (exported by the route modules).
 */
export const REQUESTS: Record<string, RouteEntry> = {
  'POST /api/v1/login': { route: '/api/v1/login', schemas: loginSchemas },
  'GET /api/v1/api_keys': { route: '/api/v1/api_keys', schemas: apiKeyList },
  'POST /api/v1/api_keys': { route: '/api/v1/api_keys', schemas: apiKeyCreate },
  'DELETE /api/v1/api_keys/{key_id}': { route: '/api/v1/api_keys/:key_id', schemas: apiKeyDelete },
  'POST /api/v1/groups': { route: '/api/v1/groups', schemas: groupCreate },
  'PATCH /api/v1/settings': { route: '/api/v1/settings', schemas: settingsPatch },
  'GET /api/v1/usage/{metric}': { route: '/api/v1/usage/:metric', schemas: usageSchemas },
  // users.routes.ts passes these shared objects of ./schemas to validate() as they are ({ query: pageQuery },
  // { params: userIdParams }).
  'GET /api/v1/users': { route: '/api/v1/users', schemas: { query: pageQuery } },
  'POST /api/v1/users': { route: '/api/v1/users', schemas: userCreate },
  'PATCH /api/v1/users/{user_id}': { route: '/api/v1/users/:user_id', schemas: userPatch },
  'PATCH /api/v1/users/me/preferences': { route: '/api/v1/users/me/preferences', schemas: preferencesSchemas },
  'POST /api/v1/users/{user_id}/access_id': { route: '/api/v1/users/:user_id/access_id', schemas: accessIdSchemas },
  'POST /api/v1/assets/new/content/original/external': { route: '/api/v1/assets/new/content/original/external', schemas: ingestSchemas },
  'GET /api/v1/users/{user_id}': { route: '/api/v1/users/:user_id', schemas: { params: userIdParams } },
  'DELETE /api/v1/users/{user_id}': { route: '/api/v1/users/:user_id', schemas: { params: userIdParams } },

  'GET /api/v1/assets/{asset_id}/data': { route: '/api/v1/assets/:id/data', schemas: assetDataSchemas },
  'GET /api/v1/assets/{asset_id}/similar': { route: '/api/v1/assets/:id/similar', schemas: similarSchemas },
  // The body is read by parseUpdateData: customMetadataSchema with `mode` required (the test proves that part).
  'POST /api/v1/assets/{asset_id}/data/update': {
    route: '/api/v1/assets/:id/data/update',
    schemas: { ...dataUpdateSchemas, body: customMetadataSchema.extend({ mode: customMetadataSchema.shape.mode.unwrap() }) },
  },
  'POST /api/v1/assets/{asset_id}/process': { route: '/api/v1/assets/:id/process', schemas: processSchemas },
  'POST /api/v1/assets/{asset_id}/addons/{addon}': { route: '/api/v1/assets/:id/addons/:addon', schemas: addonRunSchemas },
  'GET /api/v1/assets/{asset_id}/addons/{addon}': { route: '/api/v1/assets/:id/addons/:addon', schemas: addonReadSchemas },
  'POST /api/v1/assets/{asset_id}/delete': { route: '/api/v1/assets/:id/delete', schemas: keysSchemas },
  'POST /api/v1/assets/trash/{asset_id}/undelete': { route: '/api/v1/assets/trash/:id/undelete', schemas: keysSchemas },
  'POST /api/v1/assets/bulk/delete': { route: '/api/v1/assets/bulk/delete', schemas: bulkDeleteSchemas },
  'POST /api/v1/assets/{asset_id}/content/set_public_access': { route: '/api/v1/assets/:id/content/set_public_access', schemas: publicAccessSchemas },
  // Multipart body (one file in `file`): only the path is zod's.
  'POST /api/v1/assets/{asset_id}/content/{conversion_name}': { route: '/api/v1/assets/:id/content/:name', schemas: conversionSchemas },
  'DELETE /api/v1/assets/{asset_id}/content/{conversion_name}': { route: '/api/v1/assets/:id/content/:name', schemas: conversionSchemas },
  'GET /api/v1/assets/{asset_id}/content/{key}/download': { route: '/api/v1/assets/:id/content/:key/download', schemas: downloadSchemas },
  'GET /api/v1/assets/{asset_id}/conversions/{key}': { route: '/api/v1/assets/:id/conversions/:key', schemas: getConversionSchemas },
  'GET /api/v1/schemas': { route: '/api/v1/schemas', schemas: schemaListSchemas },
  'POST /api/v1/schemas': { route: '/api/v1/schemas', schemas: schemaCreateSchemas },
  'GET /api/v1/schemas/{schema_id}': { route: '/api/v1/schemas/:schema_id', schemas: schemaOneSchemas },
  'PUT /api/v1/schemas/{schema_id}': { route: '/api/v1/schemas/:schema_id', schemas: schemaUpdateSchemas },
  'GET /api/v1/collections': { route: '/api/v1/collections', schemas: collectionListSchemas },
  'POST /api/v1/collections': { route: '/api/v1/collections', schemas: collectionCreateSchemas },
  'GET /api/v1/collections/{collection_id}': { route: '/api/v1/collections/:collection_id', schemas: collectionOneSchemas },
  'PATCH /api/v1/collections/{collection_id}': { route: '/api/v1/collections/:collection_id', schemas: collectionPatchSchemas },
  'DELETE /api/v1/collections/{collection_id}': { route: '/api/v1/collections/:collection_id', schemas: collectionDeleteSchemas },
  'POST /api/v1/collections/{collection_id}/assets': { route: '/api/v1/collections/:collection_id/assets', schemas: collectionMembersSchemas },
  'DELETE /api/v1/collections/{collection_id}/assets': { route: '/api/v1/collections/:collection_id/assets', schemas: collectionMembersSchemas },
  'GET /api/v1/jobs': { route: '/api/v1/jobs', schemas: jobListSchemas },
  'GET /api/v1/jobs/{job_id}': { route: '/api/v1/jobs/:job_id', schemas: jobSchemas },
  'GET /api/v1/jobs/{job_id}/export': { route: '/api/v1/jobs/:job_id/export', schemas: jobSchemas },
  'POST /api/v1/cdn/prefetch': { route: '/api/v1/cdn/prefetch', schemas: cdnJobSchemas },
  'POST /api/v1/cdn/purge': { route: '/api/v1/cdn/purge', schemas: cdnJobSchemas },
  'POST /api/v1/callbacks/reissue': { route: '/api/v1/callbacks/reissue', schemas: reissueSchemas },
  'GET /api/v1/webhooks/deliveries': { route: '/api/v1/webhooks/deliveries', schemas: deliverySchemas },

  'GET /api/v1/assets/{asset_id}/get_link': { route: '/api/v1/assets/:id/get_link', schemas: linkSingle },
  'POST /api/v1/assets/get_link': { route: '/api/v1/assets/get_link', schemas: linksBulk },

  'POST /api/v1/assets/search': { route: '/api/v1/assets/search', schemas: searchBodySchemas },
  'POST /api/v1/search': { route: '/api/v1/search', schemas: searchBodySchemas },
  'GET /api/v1/assets/search/{search_result_id}/{page}': { route: '/api/v1/assets/search/:search_result_id/:page', schemas: searchPageSchemas },
  'GET /api/v1/search/{search_id}/{page}': { route: '/api/v1/search/:search_result_id/:page', schemas: searchPageSchemas },
};

/**
 * Routes owned by files this change may not touch, whose zod schemas are module-private: what export would let
 * them join REQUESTS.
 */
export const PENDING_EXPORT: Record<string, string> = {};

/** Documented operations whose handler validates nothing with zod, and why. */
export const NO_ZOD: Record<string, string> = {
  'GET /api/v1/auth/validate': 'no input but the JWT, read from Authorization or `_jwt` by hand',
  'POST /api/v1/auth/validate': 'as the GET form; any body is ignored',
  'GET /api/v1/users/me': 'no input',
  'POST /api/v1/users/me/uploadkey': 'no input',
  'POST /api/v1/users/me/access_id': 'no input',
  'GET /api/v1/settings': 'no input',
  'DELETE /api/v1/assets/trash/purge': 'no input; the optional text/plain body of the specification is ignored',
  'GET /api/v1/assets/{asset_id}/content/{key}/{file_path}': 'the path is checked by hand (asset id, folder key, file segments)',
  'POST /api/v1/assets/new/content/original/upload': 'multipart, streamed to storage; custom_metadata is parsed with customMetadataSchema from its JSON string',
  'POST /api/v1/uploads/tus': "tus protocol (@tus/server checks its headers); Upload-Metadata custom_metadata is parsed as Upload Asset's field",
  'PATCH /api/v1/uploads/tus/{upload_id}': 'tus protocol; the body is bytes',
  'DELETE /api/v1/uploads/tus/{upload_id}': 'tus protocol',
  'POST /api/v1/assets/{asset_id}/content/original/replace': 'multipart, as upload',
  'GET /api/v1/files/content/{asset_id}': 'the edge checks the signed query by hand: every parameter is signed, any change is 403',
  'GET /api/v1/files/content/{asset_id}/{file_path}': 'as the link itself',
  'GET /api/v1/openapi.json': "the gateway's own document, no input",
  'GET /api/v1/openapi.yaml': "the gateway's own document, no input",
  'GET /healthz': 'no input',
  'GET /readyz': 'no input',
};

const page = r.pageOf;

/** `METHOD <path> <status>` → the zod schema of the answer (JSON bodies). */
export const RESPONSES: Record<string, z.ZodType> = {
  'POST /api/v1/login 200': r.loginResult,
  'GET /api/v1/users/me 200': r.me,
  'GET /api/v1/users 200': page(r.userView),
  'POST /api/v1/users 201': r.userView,
  'GET /api/v1/users/{user_id} 200': r.userView,
  'DELETE /api/v1/users/{user_id} 200': r.userDeleted,
  'PATCH /api/v1/users/me/preferences 200': r.preferences,
  'POST /api/v1/users/me/access_id 200': r.accessIdRotated,
  'POST /api/v1/users/{user_id}/access_id 200': r.accessIdRotated,
  'POST /api/v1/users/me/uploadkey 200': r.uploadKeyRotated,
  'DELETE /api/v1/api_keys/{key_id} 200': r.apiKeyRevoked,
  'PATCH /api/v1/users/{user_id} 200': r.userView,
  'GET /api/v1/api_keys 200': page(r.apiKeyView),
  'POST /api/v1/api_keys 201': r.apiKeyCreated,
  'GET /api/v1/settings 200': r.settings,
  'PATCH /api/v1/settings 200': r.settings,
  'GET /api/v1/usage/{metric} 200': r.usage,
  'GET /api/v1/webhooks/deliveries 200': page(r.deliveryView),

  'POST /api/v1/assets/new/content/original/upload 200': r.uploadResult,
  'POST /api/v1/assets/{asset_id}/content/original/replace 200': r.uploadResult,
  'POST /api/v1/assets/new/content/original/external 200': ingestResponse,
  'POST /api/v1/assets/new/content/original/external 202': ingestResponse,

  'GET /api/v1/assets/{asset_id}/data 200': assetDataSchema,
  'POST /api/v1/assets/{asset_id}/data/update 200': assetDataSchema,
  'POST /api/v1/assets/{asset_id}/data/update 202': r.dataUpdateQueued,
  'POST /api/v1/assets/{asset_id}/delete 200': r.deleteResult,
  'POST /api/v1/assets/trash/{asset_id}/undelete 200': r.deleteResult,
  'POST /api/v1/assets/bulk/delete 200': r.bulkDeleteAccepted,
  'DELETE /api/v1/assets/trash/purge 202': r.jobAccepted,
  'POST /api/v1/assets/{asset_id}/content/set_public_access 200': r.publicAccess,
  'POST /api/v1/assets/{asset_id}/content/{conversion_name} 200': r.addedConversion,
  'DELETE /api/v1/assets/{asset_id}/content/{conversion_name} 200': r.conversionDeleted,
  'POST /api/v1/assets/{asset_id}/process 202': r.jobAccepted,
  'POST /api/v1/assets/{asset_id}/addons/{addon} 202': r.jobAccepted,
  'GET /api/v1/schemas 200': page(r.assetSchemaView),
  'POST /api/v1/schemas 201': r.assetSchemaView,
  'GET /api/v1/schemas/{schema_id} 200': r.assetSchemaView,
  'PUT /api/v1/schemas/{schema_id} 200': r.assetSchemaView,
  'GET /api/v1/collections 200': page(r.collectionView),
  'POST /api/v1/collections 201': r.collectionView,
  'GET /api/v1/collections/{collection_id} 200': r.collectionPage,
  'PATCH /api/v1/collections/{collection_id} 200': r.collectionView,
  'POST /api/v1/collections/{collection_id}/assets 200': r.collectionView,
  'DELETE /api/v1/collections/{collection_id}/assets 200': r.collectionView,
  'DELETE /api/v1/collections/{collection_id} 200': r.collectionDeleted,
  'GET /api/v1/jobs 200': page(r.jobView),
  'GET /api/v1/jobs/{job_id} 200': r.jobView,
  'POST /api/v1/cdn/prefetch 202': r.jobAccepted,
  'POST /api/v1/cdn/purge 202': r.jobAccepted,
  'POST /api/v1/callbacks/reissue 202': r.jobAccepted,

  'POST /api/v1/auth/validate 200': r.validateResult,
  'GET /api/v1/auth/validate 200': r.validateResult,
  'POST /api/v1/groups 201': r.groupCreated,
  'GET /api/v1/assets/{asset_id}/similar 200': r.similar,
  'POST /api/v1/assets/search 200': r.searchPage,
  'POST /api/v1/search 200': r.searchPage,
  'GET /api/v1/assets/search/{search_result_id}/{page} 200': r.searchPage,
  'GET /api/v1/search/{search_id}/{page} 200': r.searchPage,
  'GET /api/v1/assets/{asset_id}/get_link 200': r.link,
  'POST /api/v1/assets/get_link 200': r.links,
};

/** 2xx JSON answers without a schema to check against, and why. */
export const NO_RESPONSE_SCHEMA: Record<string, string> = {
  'GET /api/v1/assets/{asset_id}/addons/{addon} 200': 'one shape per addon (CONTRACT §6), stored as the addon reported it',
  'GET /api/v1/openapi.json 200': 'this document',
  'GET /healthz 200': 'operator endpoint: {status: ok}',
  'GET /readyz 200': 'operator endpoint: the checks of each service',
};

/** Every documented JSON error answer is the contract's error body. */
export const ERROR_BODY = r.errorBody;
