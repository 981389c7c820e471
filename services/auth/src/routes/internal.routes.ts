import { Router } from 'express';
import { z } from 'zod';
import { PERMISSION, ROLE_NAMES, hashApiKey, permissionsFor, principalOf, serviceCallOf, type Principal } from '@dam/auth-tokens';
import { authenticateRequest, type AccessIdAnswer, type AccessOwner, type UserStatus } from '@dam/internal-api';
import { notFound, unauthenticated } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { Pool } from '@dam/db';
import { ApiKeyRepository } from '../adapters/api-key.repository';
import { UserRepository } from '../adapters/user.repository';
import { SettingsRepository } from '../adapters/settings.repository';
import { apiKeyPrincipal } from '../domain/api-keys';
import type { Settings } from '../domain/settings';
import { groupIdParams } from './schemas';

const authenticateSchemas = { body: authenticateRequest };
const settingsSchemas = { params: groupIdParams };
const accessSchemas = { params: z.object({ access_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }) };
const userStatusSchemas = { params: groupIdParams.extend({ user_id: z.coerce.number().int().positive() }) };

/**
 * Only the webhook service signs deliveries: every other reader (conversion, transcode, metadata) gets the settings
 * without `webhooks`, whose secrets (and URLs, often bearer tokens themselves) it has no use for (security review I3).
 */
export function settingsFor(caller: string, settings: Settings): Partial<Settings> {
  if (caller === 'webhook') return settings;
  const { webhooks: _webhooks, ...rest } = settings;
  return rest;
}

/** Service-to-service calls; the gateway never routes /internal (docs/internal-interfaces.md). */
export function internalRoutes(pool: Pool): Router {
  const router = Router();
  const keys = new ApiKeyRepository(pool);

  router.post('/internal/v1/authenticate', validate(authenticateSchemas), async (req, res) => {
    const { body } = parsed(authenticateSchemas, req, res);
    if ('upload_key' in body) {
      // An upload key acts as its user with CREATE_ASSET alone (if the user's role grants it); looked up on every
      // call, so a rotated key or a disabled user stops at once.
      const user = await new UserRepository(pool).findByUploadKey(body.upload_key);
      const roleName = user ? ROLE_NAMES[user.role_id] : undefined;
      if (!user || user.disabled || !roleName) throw unauthenticated('The upload key is invalid', 'INVALID_UPLOAD_KEY');
      const principal: Principal = {
        user_id: user.id,
        group_id: user.group_id,
        role_id: user.role_id,
        role_name: roleName,
        permissions: permissionsFor(roleName).filter((t) => t === PERMISSION.CREATE_ASSET),
        via: 'upload_key',
      };
      res.json(principal);
      return;
    }
    // Looked up on every call, never cached, so a revoked key stops working at once.
    const found = await keys.findActiveByHash(hashApiKey(body.api_key));
    if (!found) throw unauthenticated('The API key is invalid', 'INVALID_API_KEY');
    res.json(apiKeyPrincipal(found.key, found.user_role_id));
  });

  // The edges verify JWTs locally and ask here (briefly cached) whether the user may still act, as which role,
  // and which token epoch is current, so disabling, demoting or a new password applies within seconds instead
  // of at the token's expiry.
  router.get('/internal/v1/groups/:group_id/users/:user_id/status', validate(userStatusSchemas), async (req, res) => {
    const { params } = parsed(userStatusSchemas, req, res);
    const user = await new UserRepository(pool).findVisible(params.group_id, params.user_id);
    if (!user) throw notFound('USER_NOT_FOUND', 'User not found');
    const status: UserStatus = { active: !user.disabled, role_id: user.role_id, token_epoch: user.token_epoch, access_id: user.access_id };
    res.json(status);
  });

  // link-signing asks, for the caller of Get Link, which accessID its `cdn` links carry: the user's own when signed
  // in; the key's when minted with an API key, so that revoking the key ends them (security review F17).
  router.get('/internal/v1/access_id', async (_req, res) => {
    const p = principalOf(res);
    const accessId =
      p.via === 'api_key' && p.key_id
        ? await keys.accessIdOf(p.group_id, p.key_id)
        : (await new UserRepository(pool).findVisible(p.group_id, p.user_id))?.access_id;
    if (!accessId) throw notFound('ACCESS_ID_NOT_FOUND', 'The caller has no accessID (user deleted or key revoked)');
    const answer: AccessIdAnswer = { access_id: accessId };
    res.json(answer);
  });

  // The edge of signed links asks on every request whose `accessId` a link carries (kept a few seconds at most): a
  // disabled user, a rotated accessID or a revoked key makes the links answer 403.
  router.get('/internal/v1/access/:access_id', validate(accessSchemas), async (req, res) => {
    const { params } = parsed(accessSchemas, req, res);
    const user = await new UserRepository(pool).findByAccessId(params.access_id);
    if (user) {
      const owner: AccessOwner = { user_id: user.id, group_id: user.group_id, role_id: user.role_id, active: !user.disabled };
      res.json(owner);
      return;
    }
    const key = await keys.findByAccessId(params.access_id);
    if (!key) throw notFound('ACCESS_ID_NOT_FOUND', 'No user or API key has this accessID');
    // A key's links act as the key does: its user limited to the key's role.
    const acting = apiKeyPrincipal(key.key, key.user_role_id);
    const owner: AccessOwner = { user_id: acting.user_id, group_id: acting.group_id, role_id: acting.role_id, active: !key.user_disabled };
    res.json(owner);
  });

  router.get('/internal/v1/groups/:group_id/settings', validate(settingsSchemas), async (req, res) => {
    const { params } = parsed(settingsSchemas, req, res);
    const settings = await new SettingsRepository(pool).get(params.group_id);
    if (!settings) throw notFound('GROUP_NOT_FOUND', 'Group not found');
    res.json(settingsFor(serviceCallOf(res).caller, settings));
  });

  return router;
}
