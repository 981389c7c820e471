import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { AuthStore } from '../domain/ports';
import { createGroup } from '../use-cases/create-group.use-case';
import { email, password, personName } from './schemas';

export const createSchemas = {
  body: z.object({
    name: z.string().trim().min(1).max(200),
    admin: z.object({ email, password, first_name: personName.default(''), last_name: personName.default('') }),
  }),
};

export function groupRoutes(store: AuthStore): Router {
  const router = Router();
  router.post('/api/v1/groups', validate(createSchemas), async (req, res) => {
    const { body } = parsed(createSchemas, req, res);
    const { group, admin } = await createGroup(store, principalOf(res), body);
    res.status(201).json({ group_id: group.id, name: group.name, admin_user_id: admin.id });
  });
  return router;
}
