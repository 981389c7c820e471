import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import { COLLECTION_MAX_ASSETS, toCollectionView } from '../domain/collection';
import {
  addToCollection,
  basketOf,
  collectionPage,
  createCollection,
  deleteCollection,
  removeFromCollection,
  updateCollection,
} from '../domain/collections.use-case';
import type { RunInTransaction } from '../domain/ports';

const name = z.string().trim().min(1).max(200);
const paging = z.object({
  page: z.coerce.number().int().min(1).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(25),
});
const params = z.object({ collection_id: z.string().min(1).max(64) });
const idsBody = z.strictObject({ ids: z.array(z.string().min(1).max(64)).min(1).max(COLLECTION_MAX_ASSETS) });

/**
 * Collections (CONTRACT §9): the caller's own and the group's shared ones. Changes need MANAGE_COLLECTIONS (checked
 * at the gateway); a collection the caller does not see answers 404, whatever its group.
 */
export function collectionRoutes(transactions: RunInTransaction): Router {
  const router = Router();

  const create = { body: z.strictObject({ name, shared: z.boolean().default(false) }) };
  router.post('/api/v1/collections', validate(create), async (req, res) => {
    const { body } = parsed(create, req, res);
    const c = await transactions((tx) => createCollection(tx, principalOf(res), body));
    res.status(201).json(toCollectionView(c));
  });

  const list = { query: paging };
  router.get('/api/v1/collections', validate(list), async (req, res) => {
    const { query } = parsed(list, req, res);
    const caller = principalOf(res);
    const { items, total } = await transactions(async (tx) => {
      await basketOf(tx, caller);
      return tx.collections.listVisible(caller.group_id, caller.user_id, (query.page - 1) * query.page_size, query.page_size);
    });
    res.json({ items: items.map(toCollectionView), page: query.page, page_size: query.page_size, total });
  });

  const one = { params, query: paging };
  router.get('/api/v1/collections/:collection_id', validate(one), async (req, res) => {
    const { params: p, query } = parsed(one, req, res);
    const { collection, items, total } = await transactions((tx) => collectionPage(tx, principalOf(res), p.collection_id, query.page, query.page_size));
    res.json({ ...toCollectionView(collection), items, page: query.page, page_size: query.page_size, total });
  });

  const patch = {
    params,
    body: z.strictObject({ name: name.optional(), shared: z.boolean().optional() }).refine((b) => b.name !== undefined || b.shared !== undefined, {
      message: 'name or shared is required',
    }),
  };
  router.patch('/api/v1/collections/:collection_id', validate(patch), async (req, res) => {
    const { params: p, body } = parsed(patch, req, res);
    const c = await transactions((tx) => updateCollection(tx, principalOf(res), p.collection_id, body));
    res.json(toCollectionView(c));
  });

  const remove = { params };
  router.delete('/api/v1/collections/:collection_id', validate(remove), async (req, res) => {
    const { params: p } = parsed(remove, req, res);
    const c = await transactions((tx) => deleteCollection(tx, principalOf(res), p.collection_id));
    res.json({ collection_id: c.id, deleted: true });
  });

  const members = { params, body: idsBody };
  router.post('/api/v1/collections/:collection_id/assets', validate(members), async (req, res) => {
    const { params: p, body } = parsed(members, req, res);
    const c = await transactions((tx) => addToCollection(tx, principalOf(res), p.collection_id, body.ids));
    res.json(toCollectionView(c));
  });
  router.delete('/api/v1/collections/:collection_id/assets', validate(members), async (req, res) => {
    const { params: p, body } = parsed(members, req, res);
    const c = await transactions((tx) => removeFromCollection(tx, principalOf(res), p.collection_id, body.ids));
    res.json(toCollectionView(c));
  });
  return router;
}
