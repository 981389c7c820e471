import { Router } from 'express';
import { PERMISSION, principalOf, requireAny } from '@dam/auth-tokens';
import { notFound } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import { withTransaction, type Pool } from '@dam/db';
import { SettingsRepository } from '../adapters/settings.repository';
import { applySettingsPatch, settingsPatchSchema } from '../domain/settings';

const patchSchemas = { body: settingsPatchSchema };
const settingsNotFound = () => notFound('SETTINGS_NOT_FOUND', 'Settings not found');

/** Reading is MANAGE_SETTINGS too: the record carries the webhook signing secret. */
export function settingsRoutes(pool: Pool): Router {
  const router = Router();

  router.get('/api/v1/settings', async (_req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_SETTINGS]);
    const settings = await new SettingsRepository(pool).get(p.group_id);
    if (!settings) throw settingsNotFound();
    res.json(settings);
  });

  router.patch('/api/v1/settings', validate(patchSchemas), async (req, res) => {
    const p = principalOf(res);
    requireAny(p, [PERMISSION.MANAGE_SETTINGS]);
    const { body } = parsed(patchSchemas, req, res);
    // Row lock: two concurrent PATCHes each see the other's change instead of overwriting it.
    const next = await withTransaction(pool, async (client) => {
      const repo = new SettingsRepository(client);
      const current = await repo.get(p.group_id, true);
      if (!current) throw settingsNotFound();
      const updated = applySettingsPatch(current, body);
      await repo.replace(p.group_id, updated);
      return updated;
    });
    res.json(next);
  });

  return router;
}
