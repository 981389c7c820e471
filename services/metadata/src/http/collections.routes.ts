import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import { toCollectionView } from '../domain/collection';
import {
  addToCollection,
  basketOf,
  collectionPage,
  countedFor,
  createCollection,
  deleteCollection,
  removeFromCollection,
  collectionNotFound,
  updateCollection,
} from '../use-cases/collections.use-case';
import type { RunInTransaction } from '../domain/ports';

const name = z.string().trim().min(1).max(200);
const paging = z.object({
  page: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(25),
});
const params = z.object({ collection_id: pathId(z.string().min(1).max(64), collectionNotFound) });
// No count limit of its own: past the collection's 300 an add answers 409 however many come in one call (CONTRACT §16);
// the JSON body limit bounds the list.
const idsBody = z.strictObject({ ids: z.array(z.string().min(1).max(64)).min(1) });
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const collectionCreateSchemas = { body: z.strictObject({ name, shared: z.boolean().default(false) }) };
export const collectionListSchemas = { query: paging };
export const collectionOneSchemas = { params, query: paging };
export const collectionPatchSchemas = {
  params,
  body: z.strictObject({ name: name.optional(), shared: z.boolean().optional() }).refine((b) => b.name !== undefined || b.shared !== undefined, {
    message: 'name or shared is required',
  }),
};
export const collectionDeleteSchemas = { params };
export const collectionMembersSchemas = { params, body: idsBody };

/**
 * Collections (CONTRACT §9): the caller's own and the group's shared ones. Changes need MANAGE_COLLECTIONS (checked
 * at the gateway); a collection the caller does not see answers 404, whatever its group.
 */
export function collectionRoutes(transactions: RunInTransaction): Router {
  const router = Router();

  router.post('/api/v1/collections', validate(collectionCreateSchemas), async (req, res) => {
    const { body } = parsed(collectionCreateSchemas, req, res);
    const c = await transactions((tx) => createCollection(tx, principalOf(res), body));
    res.status(201).json(toCollectionView(c));
  });

  router.get('/api/v1/collections', validate(collectionListSchemas), async (req, res) => {
    const { query } = parsed(collectionListSchemas, req, res);
    const caller = principalOf(res);
    const { items, total } = await transactions(async (tx) => {
      await basketOf(tx, caller);
      return tx.collections.listVisible(caller.group_id, caller.user_id, (query.page - 1) * query.page_size, query.page_size, countedFor(caller));
    });
    res.json({ items: items.map(toCollectionView), page: query.page, page_size: query.page_size, total });
  });

  router.get('/api/v1/collections/:collection_id', validate(collectionOneSchemas), async (req, res) => {
    const { params: p, query } = parsed(collectionOneSchemas, req, res);
    const { collection, items, total } = await transactions((tx) => collectionPage(tx, principalOf(res), p.collection_id, query.page, query.page_size));
    res.json({ ...toCollectionView(collection), items, page: query.page, page_size: query.page_size, total });
  });

  router.patch('/api/v1/collections/:collection_id', validate(collectionPatchSchemas), async (req, res) => {
    const { params: p, body } = parsed(collectionPatchSchemas, req, res);
    const c = await transactions((tx) => updateCollection(tx, principalOf(res), p.collection_id, body));
    res.json(toCollectionView(c));
  });

  router.delete('/api/v1/collections/:collection_id', validate(collectionDeleteSchemas), async (req, res) => {
    const { params: p } = parsed(collectionDeleteSchemas, req, res);
    const c = await transactions((tx) => deleteCollection(tx, principalOf(res), p.collection_id));
    res.json({ collection_id: c.id, deleted: true });
  });

  router.post('/api/v1/collections/:collection_id/assets', validate(collectionMembersSchemas), async (req, res) => {
    const { params: p, body } = parsed(collectionMembersSchemas, req, res);
    const c = await transactions((tx) => addToCollection(tx, principalOf(res), p.collection_id, body.ids));
    res.json(toCollectionView(c));
  });
  router.delete('/api/v1/collections/:collection_id/assets', validate(collectionMembersSchemas), async (req, res) => {
    const { params: p, body } = parsed(collectionMembersSchemas, req, res);
    const c = await transactions((tx) => removeFromCollection(tx, principalOf(res), p.collection_id, body.ids));
    res.json(toCollectionView(c));
  });
  return router;
}
