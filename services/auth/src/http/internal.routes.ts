import { Router } from 'express';
import { z } from 'zod';
import { principalOf, serviceCallOf } from '@dam/auth-tokens';
import { authenticateRequest } from '@dam/internal-api';
import { parsed, validate } from '@dam/http';
import type { AuthStore } from '../domain/ports';
import { accessIdOfCaller, accessOwner, authenticate, groupSettingsFor, userStatus } from '../use-cases/internal-identity.use-case';
import { groupIdParams } from './schemas';

const authenticateSchemas = { body: authenticateRequest };
const settingsSchemas = { params: groupIdParams };
const accessSchemas = { params: z.object({ access_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }) };
const userStatusSchemas = { params: groupIdParams.extend({ user_id: z.coerce.number().int().positive() }) };

/** Service-to-service calls; the gateway never routes /internal (docs/internal-interfaces.md). */
export function internalRoutes(store: AuthStore): Router {
  const router = Router();

  // The two public edges authenticate API keys and upload keys here.
  router.post('/internal/v1/authenticate', validate(authenticateSchemas), async (req, res) => {
    res.json(await authenticate(store, parsed(authenticateSchemas, req, res).body));
  });

  // The edges verify JWTs locally and ask here (briefly cached) whether the user may still act, so disabling,
  // demoting or a new password applies within seconds instead of at the token's expiry.
  router.get('/internal/v1/groups/:group_id/users/:user_id/status', validate(userStatusSchemas), async (req, res) => {
    const { params } = parsed(userStatusSchemas, req, res);
    res.json(await userStatus(store, params.group_id, params.user_id));
  });

  // link-signing asks, for the caller of Get Link, which accessID its `cdn` links carry.
  router.get('/internal/v1/access_id', async (_req, res) => {
    res.json(await accessIdOfCaller(store, principalOf(res)));
  });

  // The edge of signed links asks on every request whose `accessId` a link carries (kept a few seconds at most).
  router.get('/internal/v1/access/:access_id', validate(accessSchemas), async (req, res) => {
    res.json(await accessOwner(store, parsed(accessSchemas, req, res).params.access_id));
  });

  router.get('/internal/v1/groups/:group_id/settings', validate(settingsSchemas), async (req, res) => {
    const { params } = parsed(settingsSchemas, req, res);
    res.json(await groupSettingsFor(store, serviceCallOf(res).caller, params.group_id));
  });

  return router;
}
