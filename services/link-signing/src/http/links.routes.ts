import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import { TRANSFORM_FITS } from '@dam/internal-api';
import { LINK_FORMATS, TRANSFORM_MAX_QUALITY, TRANSFORM_MAX_SIDE, TRANSFORM_QUERY, type LinkTransform } from '../domain/link-signature';
import { assetNotFound, getLink, getLinks, type GetLinkDeps, type LinkOptions } from '../use-cases/get-link.use-case';

export type LinkDeps = GetLinkDeps;

const options = {
  key: z.string().min(1).max(64).default('original'),
  link_type: z.enum(['cdn', 'object_storage']).default('cdn'),
  delivery: z.enum(['display', 'download']).default('download'),
  expiry: z.union([z.string(), z.number()]).default('3600').transform(String),
  // CONTRACT §15: Get Conversion's on-demand parameters, signed into a cdn link of an image key.
  w: z.coerce.number().int().min(1).max(TRANSFORM_MAX_SIDE).optional(),
  h: z.coerce.number().int().min(1).max(TRANSFORM_MAX_SIDE).optional(),
  fit: z.enum(TRANSFORM_FITS).optional(),
  format: z.enum(LINK_FORMATS).optional(),
  q: z.coerce.number().int().min(1).max(TRANSFORM_MAX_QUALITY).optional(),
};

type Options = z.output<typeof single.query>;

/** The request's options as the use case takes them: the transform's parameters gathered, those not given left out. */
function linkOptions(o: Options): LinkOptions {
  const transform: LinkTransform = {};
  for (const name of TRANSFORM_QUERY) if (o[name] !== undefined) Object.assign(transform, { [name]: o[name] });
  return { key: o.key, link_type: o.link_type, delivery: o.delivery, expiry: o.expiry, transform };
}
/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test); an id of no asset's form is an unknown asset (404). */
export const single = { params: z.object({ id: pathId(z.string().min(1).max(64), assetNotFound) }), query: z.object(options) };
export const bulk = { body: z.object({ ids: z.array(z.string().min(1).max(64)).min(1).max(100), ...options }) };

/** Get Link (endpoint 16, CONTRACT §7, §11 and §15): single and bulk. */
export function linkRoutes(deps: LinkDeps): Router {
  const router = Router();

  router.get('/api/v1/assets/:id/get_link', validate(single), async (req, res) => {
    const { params, query } = parsed(single, req, res);
    const made = await getLink(deps, principalOf(res), params.id, linkOptions(query));
    res.json({ id: made.id, key: query.key, link_type: query.link_type, url: made.url, expires_at: made.expires_at });
  });

  router.post('/api/v1/assets/get_link', validate(bulk), async (req, res) => {
    const { body } = parsed(bulk, req, res);
    res.json({ links: await getLinks(deps, principalOf(res), body.ids, linkOptions(body)) });
  });

  return router;
}
