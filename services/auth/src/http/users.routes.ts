import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { AuthStore } from '../domain/ports';
import { createUser, deleteUser, getUser, listUsers, updateUser } from '../use-cases/manage-users.use-case';
import { mergePreferences, ownProfile, rotateAccessId, rotateUploadKey } from '../use-cases/own-account.use-case';
import { email, userIdParams, pageQuery, password, personName } from './schemas';

const roleId = z.literal([1, 2, 3, 4], { error: 'must be 1 (ADMIN), 2 (MANAGER), 3 (USER) or 4 (CREATOR)' });
export const createSchemas = {
  body: z.object({ email, password, first_name: personName.default(''), last_name: personName.default(''), role_id: roleId }),
};
const listSchemas = { query: pageQuery };
const oneSchemas = { params: userIdParams };
export const patchSchemas = {
  params: userIdParams,
  body: z
    .strictObject({ role_id: roleId.optional(), disabled: z.boolean().optional(), password: password.optional() })
    .refine((b) => Object.keys(b).length > 0, { message: 'send at least one of role_id, disabled, password' }),
};
export const accessIdSchemas = { params: userIdParams };
export const preferencesSchemas = { body: z.record(z.string(), z.unknown()) };

export function userRoutes(store: AuthStore): Router {
  const router = Router();

  router.get('/api/v1/users/me', async (_req, res) => {
    res.json(await ownProfile(store, principalOf(res)));
  });

  router.patch('/api/v1/users/me/preferences', validate(preferencesSchemas), async (req, res) => {
    res.json({ preferences: await mergePreferences(store, principalOf(res), parsed(preferencesSchemas, req, res).body) });
  });

  router.post('/api/v1/users/me/access_id', async (_req, res) => {
    const p = principalOf(res);
    res.json({ user_id: p.user_id, accessID: await rotateAccessId(store, p, p.user_id) });
  });
  router.post('/api/v1/users/:user_id/access_id', validate(accessIdSchemas), async (req, res) => {
    const { user_id } = parsed(accessIdSchemas, req, res).params;
    res.json({ user_id, accessID: await rotateAccessId(store, principalOf(res), user_id) });
  });

  router.post('/api/v1/users/me/uploadkey', async (_req, res) => {
    const uploadkey = await rotateUploadKey(store, principalOf(res));
    // no-store: no cache, and no kept Idempotency-Key answer (libs/http idempotency.ts), holds the key.
    res.setHeader('Cache-Control', 'no-store').json({ uploadkey });
  });

  router.post('/api/v1/users', validate(createSchemas), async (req, res) => {
    res.status(201).json(await createUser(store, principalOf(res), parsed(createSchemas, req, res).body));
  });

  router.get('/api/v1/users', validate(listSchemas), async (req, res) => {
    res.json(await listUsers(store, principalOf(res), parsed(listSchemas, req, res).query));
  });

  router.get('/api/v1/users/:user_id', validate(oneSchemas), async (req, res) => {
    const { params } = parsed(oneSchemas, req, res);
    res.json(await getUser(store, principalOf(res), params.user_id));
  });

  router.patch('/api/v1/users/:user_id', validate(patchSchemas), async (req, res) => {
    const { params, body } = parsed(patchSchemas, req, res);
    res.json(await updateUser(store, principalOf(res), params.user_id, body));
  });

  router.delete('/api/v1/users/:user_id', validate(oneSchemas), async (req, res) => {
    const { params } = parsed(oneSchemas, req, res);
    await deleteUser(store, principalOf(res), params.user_id);
    res.json({ user_id: params.user_id, deleted: true });
  });

  return router;
}
