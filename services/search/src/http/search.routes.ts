import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { hasPermission, PERMISSION, principalOf, readsOwnOnly } from '@dam/auth-tokens';
import { parsed, pathId, validate } from '@dam/http';
import { RESULT_CAP, searchRequest } from '../domain/search-request';
import { searchAssets, searchPage, searchResultNotFound, type SearchDeps, type Searcher } from '../use-cases/search-assets.use-case';

export interface SearchRouteDeps extends SearchDeps {
  /** `Sunset` of the deprecated paths. */
  sunset?: string;
}

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test); a result id of no set's form is an unknown set (404, CONTRACT §16). */
export const searchBodySchemas = { body: searchRequest };
export const searchPageSchemas = {
  params: z.object({
    search_result_id: pathId(z.string().regex(/^[0-9a-f]{32}$/, 'must be a search result id'), searchResultNotFound),
    page: z.coerce.number().int().min(1).max(RESULT_CAP),
  }),
};

const searcherOf = (res: Response): Searcher => {
  const p = principalOf(res);
  return { groupId: p.group_id, userId: p.user_id, ownOnly: readsOwnOnly(p), maySearchTrash: hasPermission(p, PERMISSION.PURGE_TRASH) };
};

/** Search (spec endpoint 19, CONTRACT §8) and its pages, under the current paths and the deprecated ones. */
export function searchRoutes(deps: SearchRouteDeps): Router {
  const router = Router();

  const run = async (req: Request, res: Response) => {
    res.json(await searchAssets(deps, searcherOf(res), parsed(searchBodySchemas, req, res).body));
  };
  const page = async (req: Request, res: Response) => {
    const { params } = parsed(searchPageSchemas, req, res);
    res.json(await searchPage(deps, searcherOf(res), params.search_result_id, params.page));
  };
  const deprecated = (successor: string) => (res: Response) => {
    res.setHeader('Deprecation', 'true');
    if (deps.sunset) res.setHeader('Sunset', deps.sunset);
    res.setHeader('Link', `<${successor}>; rel="successor-version"`);
  };

  router.post('/api/v1/assets/search', validate(searchBodySchemas), run);
  router.post('/api/v1/search', validate(searchBodySchemas), async (req, res) => {
    deprecated('/api/v1/assets/search')(res);
    await run(req, res);
  });
  router.get('/api/v1/assets/search/:search_result_id/:page', validate(searchPageSchemas), page);
  router.get('/api/v1/search/:search_result_id/:page', validate(searchPageSchemas), async (req, res) => {
    deprecated(`/api/v1/assets/search/${String(req.params.search_result_id)}/${String(req.params.page)}`)(res);
    await page(req, res);
  });
  return router;
}
