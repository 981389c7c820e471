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
  via: z.enum(['jwt', 'api_key']),
  key_id: z.string().optional(),
  key_role: z.string().optional(),
});

/** auth `POST /internal/v1/authenticate` (callers: gateway, upload). */
export const authenticateRequest = z.object({ api_key: z.string().min(1).max(512) });
export const authenticateResponse = principalSchema;

/** auth `GET /internal/v1/groups/:group_id/users/:user_id/status` (callers: gateway, upload); 404 = gone. */
export const userStatusResponse = z.object({
  active: z.boolean(),
  role_id: z.number().int().positive(),
  /** JWTs with an older `ep` are revoked; absent from an older auth (no revocation then). */
  token_epoch: z.number().int().min(0).optional(),
});
export type UserStatus = z.infer<typeof userStatusResponse>;

/** metadata `POST /internal/v1/assets` (caller: upload, for the uploader): the created records (asset data). */
export const createAssetsResponse = z.object({ assets: z.array(z.looseObject({ id: z.string(), status: z.string() })) });

/** metadata `POST /internal/v1/assets/exists` (callers: upload, auth; for a user of the group). */
export const assetsExistRequest = z.object({
  ids: z.array(z.string().regex(/^[A-Za-z0-9]{32}$/, 'must be 32 alphanumeric characters')).min(1).max(1000),
});
export const assetsExistResponse = z.object({ existing: z.array(z.string()) });

/** auth `GET /internal/v1/groups/:group_id/settings` (caller: conversion): the record, read by each worker for its part. */
export const groupSettingsResponse = z.looseObject({});

export const INTERNAL_PATHS = {
  authenticate: '/internal/v1/authenticate',
  userStatus: (groupId: number | string, userId: number | string) => `/internal/v1/groups/${groupId}/users/${userId}/status`,
  groupSettings: (groupId: number | string) => `/internal/v1/groups/${encodeURIComponent(String(groupId))}/settings`,
  assets: '/internal/v1/assets',
  assetsExist: '/internal/v1/assets/exists',
} as const;
