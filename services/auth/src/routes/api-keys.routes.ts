import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { z } from 'zod';
import { API_KEY_ROLES, PERMISSION, generateApiKey, hashApiKey, principalOf, requireAny, roleIdOfKeyRole } from '@dam/auth-tokens';
import { forbidden, notFound } from '@dam/errors';
import { parsed, pathId, validate } from '@dam/http';
import type { Pool } from '@dam/db';
import { ApiKeyRepository } from '../adapters/api-key.repository';
import { toApiKeyView } from '../domain/api-keys';
import { revokeApiKey } from '../use-cases/revoke-api-key.use-case';
import { pageQuery } from './schemas';

export const createSchemas = { body: z.object({ name: z.string().trim().min(1).max(200), role: z.enum(API_KEY_ROLES) }) };
export const listSchemas = { query: pageQuery };
const apiKeyNotFound = () => notFound('API_KEY_NOT_FOUND', 'API key not found');
export const deleteSchemas = { params: z.object({ key_id: pathId(z.string().min(1).max(100), apiKeyNotFound) }) };

export function apiKeyRoutes(pool: Pool): Router {
  const router = Router();
  const keys = new ApiKeyRepository(pool);

  router.post('/api/v1/api_keys', validate(createSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { body } = parsed(createSchemas, req, res);
    // A key never mints keys: they would outlive it and could be stronger. Only a person signed in may.
    if (p.via !== 'jwt') throw forbidden('API keys are created by a signed-in user (JWT), not with an API key', 'API_KEY_CANNOT_MINT');
    // Never above the minter's own role (lower role ids are stronger; ASSET_ADMIN acts as ADMIN).
    if (roleIdOfKeyRole(body.role) < p.role_id) {
      throw forbidden(`A key of role ${body.role} would be stronger than your own role ${p.role_name}`, 'ROLE_ABOVE_YOUR_OWN');
    }
    const key = generateApiKey();
    // Stored only as a hash: this response is the one time the key is ever seen.
    const record = await keys.insert(
      { id: randomUUID(), group_id: p.group_id, user_id: p.user_id, name: body.name, role: body.role },
      hashApiKey(key),
    );
    // no-store: no cache, and no kept Idempotency-Key answer (libs/http idempotency.ts), holds the key.
    res.status(201).setHeader('Cache-Control', 'no-store').json({ key_id: record.id, name: record.name, role: record.role, key });
  });

  router.get('/api/v1/api_keys', validate(listSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { query } = parsed(listSchemas, req, res);
    const { items, total } = await keys.listActive(p.group_id, query);
    res.json({ items: items.map(toApiKeyView), page: query.page, page_size: query.page_size, total });
  });

  router.delete('/api/v1/api_keys/:key_id', validate(deleteSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { params } = parsed(deleteSchemas, req, res);
    if (!(await revokeApiKey(pool, { groupId: p.group_id, keyId: params.key_id, byUserId: p.user_id }))) throw apiKeyNotFound();
    res.json({ key_id: params.key_id, revoked: true });
  });

  return router;
}
