import { Router } from 'express';
import { z } from 'zod';
import { hasPermission, PERMISSION, principalOf, type Principal } from '@dam/auth-tokens';
import { forbidden, notFound, payloadTooLarge } from '@dam/errors';
import { parsed, pathId, validate } from '@dam/http';
import { compileSchema, defaultSchema, toSchemaView } from '../domain/asset-schema';
import type { RunInTransaction } from '../domain/ports';

const schemaNotFound = () => notFound('SCHEMA_NOT_FOUND', 'The schema does not exist');
/** A schema document larger than this is refused (it is compiled on every validation cache miss). */
const MAX_SCHEMA_CHARS = 64 * 1024;

const serviceProperty = z.object({ searchable: z.boolean().optional(), keyword: z.boolean().optional(), ui: z.record(z.string(), z.unknown()).optional() });
const body = z.object({
  name: z.string().trim().min(1).max(200),
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]),
  service_properties: z.record(z.string().min(1).max(500), serviceProperty).default({}),
});

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const schemaCreateSchemas = { body };
export const schemaListSchemas = {
  query: z.object({
    page: z.coerce.number().int().min(1).default(1),
    page_size: z.coerce.number().int().min(1).max(100).default(25),
  }),
};
export const schemaOneSchemas = {
  params: z.object({
    schema_id: pathId(
      z.coerce
        .number()
        .int()
        .nonnegative()
        .max(2 ** 31 - 1),
      schemaNotFound,
    ),
  }),
};
export const schemaUpdateSchemas = { params: schemaOneSchemas.params, body };

/**
 * Creating and changing schemas needs MANAGE_SCHEMAS, checked here as well as at the gateway: a route "checked at the
 * gateway only" is open to any request that reaches it another way (security review F3: a path the gateway matched
 * to one route and forwarded to another).
 */
const mayManageSchemas = (caller: Principal): void => {
  if (!hasPermission(caller, PERMISSION.MANAGE_SCHEMAS)) throw forbidden('Creating or changing schemas needs the MANAGE_SCHEMAS permission');
};

/** CONTRACT §5 schemas: create, list, get, update (MANAGE_SCHEMAS to create and update); schema 0 is built in. */
export function schemaRoutes(transactions: RunInTransaction): Router {
  const router = Router();
  const checked = (b: z.output<typeof body>) => {
    if (JSON.stringify(b.schema).length > MAX_SCHEMA_CHARS) throw payloadTooLarge(`The schema is over ${MAX_SCHEMA_CHARS} characters`, 'SCHEMA_TOO_LARGE');
    compileSchema(b.schema);
    return { name: b.name, schema: b.schema, serviceProperties: b.service_properties };
  };

  router.post('/api/v1/schemas', validate(schemaCreateSchemas), async (req, res) => {
    const { body: b } = parsed(schemaCreateSchemas, req, res);
    const caller = principalOf(res);
    mayManageSchemas(caller);
    const s = await transactions(async (tx) => {
      const created = await tx.schemas.create(caller.group_id, checked(b));
      await tx.events.writeSchemaSaved(created);
      return created;
    });
    res.status(201).json(toSchemaView(s));
  });

  router.get('/api/v1/schemas', validate(schemaListSchemas), async (req, res) => {
    const { query } = parsed(schemaListSchemas, req, res);
    const groupId = principalOf(res).group_id;
    // Schema 0 is the first item of page 1; stored schemas follow it, so every page has the size asked for.
    const start = (query.page - 1) * query.page_size;
    const { items, total } = await transactions(async (tx) => {
      if (start > 0) return tx.schemas.list(groupId, start - 1, query.page_size);
      const stored = await tx.schemas.list(groupId, 0, query.page_size - 1);
      return { items: [defaultSchema(groupId), ...stored.items], total: stored.total };
    });
    res.json({ items: items.map(toSchemaView), page: query.page, page_size: query.page_size, total: total + 1 });
  });

  router.get('/api/v1/schemas/:schema_id', validate(schemaOneSchemas), async (req, res) => {
    const { params } = parsed(schemaOneSchemas, req, res);
    const groupId = principalOf(res).group_id;
    const s = params.schema_id === 0 ? defaultSchema(groupId) : await transactions((tx) => tx.schemas.find(groupId, params.schema_id));
    if (!s) throw schemaNotFound();
    res.json(toSchemaView(s));
  });

  router.put('/api/v1/schemas/:schema_id', validate(schemaUpdateSchemas), async (req, res) => {
    const { params, body: b } = parsed(schemaUpdateSchemas, req, res);
    mayManageSchemas(principalOf(res));
    if (params.schema_id === 0) throw forbidden('Schema 0 is the built-in default and cannot be changed', 'SCHEMA_READ_ONLY');
    const groupId = principalOf(res).group_id;
    // Assets already valid under the old version stay as they are; their next update is checked against this one.
    const s = await transactions(async (tx) => {
      const updated = await tx.schemas.update(groupId, params.schema_id, checked(b));
      if (updated) await tx.events.writeSchemaSaved(updated);
      return updated;
    });
    if (!s) throw schemaNotFound();
    res.json(toSchemaView(s));
  });
  return router;
}
