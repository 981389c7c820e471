import { Router } from 'express';
import { z } from 'zod';
import { API_KEY_ROLES, principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import type { AuthStore } from '../domain/ports';
import { apiKeyNotFound, disableApiKey, listApiKeys, mintApiKey } from '../use-cases/api-keys.use-case';
import { pageQuery } from './schemas';

export const createSchemas = { body: z.object({ name: z.string().trim().min(1).max(200), role: z.enum(API_KEY_ROLES) }) };
export const listSchemas = { query: pageQuery };
export const deleteSchemas = { params: z.object({ key_id: pathId(z.string().min(1).max(100), apiKeyNotFound) }) };

export function apiKeyRoutes(store: AuthStore): Router {
  const router = Router();

  router.post('/api/v1/api_keys', validate(createSchemas), async (req, res) => {
    const { body } = parsed(createSchemas, req, res);
    const minted = await mintApiKey(store, principalOf(res), body);
    // no-store: no cache, and no kept Idempotency-Key answer (libs/http idempotency.ts), holds the key.
    res.status(201).setHeader('Cache-Control', 'no-store').json(minted);
  });

  router.get('/api/v1/api_keys', validate(listSchemas), async (req, res) => {
    res.json(await listApiKeys(store, principalOf(res), parsed(listSchemas, req, res).query));
  });

  router.delete('/api/v1/api_keys/:key_id', validate(deleteSchemas), async (req, res) => {
    const { params } = parsed(deleteSchemas, req, res);
    await disableApiKey(store, principalOf(res), params.key_id);
    res.json({ key_id: params.key_id, revoked: true });
  });

  return router;
}
