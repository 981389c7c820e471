import { Router } from 'express';
import { z } from 'zod';
import { PERMISSION, ROLES, principalOf, hasPermission } from '@dam/auth-tokens';
import { forbidden } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { Pool } from '@dam/db';
import { createGroup } from '../use-cases/create-group.use-case';
import { email, password, personName } from './schemas';

export const createSchemas = {
  body: z.object({
    name: z.string().trim().min(1).max(200),
    admin: z.object({ email, password, first_name: personName.default(''), last_name: personName.default('') }),
  }),
};

/** The operator's group (1) creates tenants; nobody else can. */
const ROOT_GROUP = 1;

export function groupRoutes(pool: Pool): Router {
  const router = Router();
  router.post('/api/v1/groups', validate(createSchemas), async (req, res) => {
    const p = principalOf(res);
    if (p.group_id !== ROOT_GROUP || p.role_id !== ROLES.ADMIN || !hasPermission(p, PERMISSION.MANAGE_USERS)) {
      throw forbidden('Only the ADMIN of group 1 can create groups');
    }
    const { body } = parsed(createSchemas, req, res);
    const { group, admin } = await createGroup(pool, body);
    res.status(201).json({ group_id: group.id, name: group.name, admin_user_id: admin.id });
  });
  return router;
}
