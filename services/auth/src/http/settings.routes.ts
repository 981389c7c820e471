import { Router } from 'express';
import { principalOf } from '@dam/auth-tokens';
import { parsed, validate } from '@dam/http';
import type { AuthStore } from '../domain/ports';
import { settingsPatchSchema } from '../domain/settings';
import { getSettings, patchSettings, type SettingsDeps } from '../use-cases/settings.use-case';

export const patchSchemas = { body: settingsPatchSchema };

export function settingsRoutes(deps: SettingsDeps & { store: AuthStore }): Router {
  const router = Router();

  router.get('/api/v1/settings', async (_req, res) => {
    res.json(await getSettings(deps.store, principalOf(res)));
  });

  router.patch('/api/v1/settings', validate(patchSchemas), async (req, res) => {
    res.json(await patchSettings(deps, principalOf(res), parsed(patchSchemas, req, res).body));
  });

  return router;
}
