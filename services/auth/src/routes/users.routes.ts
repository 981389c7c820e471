import { Router, type Response } from 'express';
import { z } from 'zod';
import { PERMISSION, principalOf, requireAny, type Principal } from '@dam/auth-tokens';
import { conflict, forbidden, notFound, payloadTooLarge } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { Pool } from '@dam/db';
import { ApiKeyRepository } from '../adapters/api-key.repository';
import { UserRepository } from '../adapters/user.repository';
import { hashPassword } from '../domain/passwords';
import { PREFERENCES_MAX_BYTES, normalizeEmail, toUserView } from '../domain/users';
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

const userNotFound = () => notFound('USER_NOT_FOUND', 'User not found');

/**
 * Rotating your own upload key or accessID needs you signed in (a JWT), as minting API keys does: a key, even a
 * CREATOR one meant for uploads alone, would otherwise end every link and upload widget of its user (security
 * review F17). Another user's accessID stays with MANAGE_USERS, which may disable that user anyway.
 */
function requireSession(p: Principal, what: string): void {
  if (p.via !== 'jwt') throw forbidden(`Your ${what} is rotated by you signed in (JWT), not with an API key`, 'API_KEY_CANNOT_ROTATE');
}

export function userRoutes(pool: Pool): Router {
  const router = Router();
  const users = new UserRepository(pool);

  router.get('/api/v1/users/me', async (_req, res) => {
    const p = principalOf(res);
    const user = await users.findVisible(p.group_id, p.user_id);
    if (!user) throw userNotFound();
    res.json({ ...toUserView(user), group_id: user.group_id, permissions: p.permissions, preferences: user.preferences });
  });

  router.patch('/api/v1/users/me/preferences', validate(preferencesSchemas), async (req, res) => {
    const p = principalOf(res);
    const { body } = parsed(preferencesSchemas, req, res);
    const user = await users.findVisible(p.group_id, p.user_id);
    if (!user) throw userNotFound();
    // Shallow merge; a member set to null is removed.
    const merged: Record<string, unknown> = { ...user.preferences, ...body };
    for (const [k, v] of Object.entries(body)) if (v === null) delete merged[k];
    if (Buffer.byteLength(JSON.stringify(merged)) > PREFERENCES_MAX_BYTES) {
      throw payloadTooLarge(`Preferences are limited to ${PREFERENCES_MAX_BYTES} bytes`);
    }
    await users.setPreferences(user.id, merged);
    res.json({ preferences: merged });
  });

  // A new accessID for signed links (CONTRACT §7): every link signed under the old one answers 403 at once.
  // Yourself (signed in), or any user of the group with MANAGE_USERS.
  const rotateAccessId = async (res: Response, userId: number) => {
    const p = principalOf(res);
    if (userId !== p.user_id) requireAny(p, [PERMISSION.MANAGE_USERS]);
    else requireSession(p, 'accessID');
    const accessId = await users.rotateAccessId(p.group_id, userId);
    if (!accessId) throw userNotFound();
    res.json({ user_id: userId, accessID: accessId });
  };
  router.post('/api/v1/users/me/access_id', async (_req, res) => rotateAccessId(res, principalOf(res).user_id));
  router.post('/api/v1/users/:user_id/access_id', validate(accessIdSchemas), async (req, res) => rotateAccessId(res, parsed(accessIdSchemas, req, res).params.user_id));

  // A new upload key (CONTRACT §12), for yourself only: the old key answers 401 at once.
  router.post('/api/v1/users/me/uploadkey', async (_req, res) => {
    const p = principalOf(res);
    requireSession(p, 'upload key');
    const uploadkey = await users.rotateUploadKey(p.group_id, p.user_id);
    if (!uploadkey) throw userNotFound();
    // no-store: no cache, and no kept Idempotency-Key answer (libs/http idempotency.ts), holds the key.
    res.setHeader('Cache-Control', 'no-store').json({ uploadkey });
  });

  router.post('/api/v1/users', validate(createSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { body } = parsed(createSchemas, req, res);
    const user = await users.insert({
      group_id: p.group_id,
      email: normalizeEmail(body.email),
      password_hash: await hashPassword(body.password),
      first_name: body.first_name,
      last_name: body.last_name,
      role_id: body.role_id,
    });
    res.status(201).json(toUserView(user));
  });

  router.get('/api/v1/users', validate(listSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { query } = parsed(listSchemas, req, res);
    const { items, total } = await users.listInGroup(p.group_id, query);
    res.json({ items: items.map(toUserView), page: query.page, page_size: query.page_size, total });
  });

  router.get('/api/v1/users/:user_id', validate(oneSchemas), async (req, res) => {
    const p = principalOf(res);
    const { params } = parsed(oneSchemas, req, res);
    if (params.user_id !== p.user_id) requireAny(p, [PERMISSION.MANAGE_USERS]);
    const user = await users.findVisible(p.group_id, params.user_id);
    if (!user) throw userNotFound();
    res.json(toUserView(user));
  });

  router.patch('/api/v1/users/:user_id', validate(patchSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { params, body } = parsed(patchSchemas, req, res);
    if (!(await users.findVisible(p.group_id, params.user_id))) throw userNotFound();
    // An admin locking themselves out (or demoting the last admin by accident) is never what was meant.
    if (params.user_id === p.user_id && (body.disabled === true || (body.role_id !== undefined && body.role_id !== p.role_id))) {
      throw conflict('CANNOT_MODIFY_SELF', 'You cannot disable yourself or change your own role');
    }
    const user = await users.update(p.group_id, params.user_id, {
      role_id: body.role_id,
      disabled: body.disabled,
      password_hash: body.password ? await hashPassword(body.password) : undefined,
    });
    if (!user) throw userNotFound();
    res.json(toUserView(user));
  });

  router.delete('/api/v1/users/:user_id', validate(oneSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_USERS]);
    const { params } = parsed(oneSchemas, req, res);
    if (params.user_id === p.user_id) throw conflict('CANNOT_MODIFY_SELF', 'You cannot delete yourself');
    if (!(await users.softDelete(p.group_id, params.user_id))) throw userNotFound();
    await new ApiKeyRepository(pool).revokeAllOfUser(params.user_id);
    res.json({ user_id: params.user_id, deleted: true });
  });

  return router;
}
