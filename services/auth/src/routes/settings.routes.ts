import { Router } from 'express';
import { PERMISSION, principalOf, requireAny } from '@dam/auth-tokens';
import { notFound, validationFailed, type ErrorDetail } from '@dam/errors';
import { outboundTargetProblem, outboundUrlProblem, parsed, validate } from '@dam/http';
import { withTransaction, type Pool } from '@dam/db';
import type { AssetDirectory } from '../adapters/metadata-assets.client';
import { SettingsRepository } from '../adapters/settings.repository';
import { applySettingsPatch, settingsPatchSchema } from '../domain/settings';
import type { Logger } from '@dam/logging';

export const patchSchemas = { body: settingsPatchSchema };
const settingsNotFound = () => notFound('SETTINGS_NOT_FOUND', 'Settings not found');

export interface SettingsRoutesDeps {
  pool: Pool;
  /** Asks metadata whether a watermark asset belongs to the caller's group. */
  assets: AssetDirectory;
  /** WEBHOOK_ALLOW_HOSTS: the only hosts a webhook URL may name despite the outbound guard (and over http). */
  webhookAllowHosts: readonly string[];
  /** Announces a committed change to the services that keep group settings (before the answer goes out). */
  announce?: (groupId: number) => Promise<void>;
  logger: Pick<Logger, 'warn'>;
}

/** Reading is MANAGE_SETTINGS too: the record carries the webhook signing secret. */
export function settingsRoutes({ pool, assets, webhookAllowHosts, announce, logger }: SettingsRoutesDeps): Router {
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
    const problems: ErrorDetail[] = [];
    // CONTRACT §11: no webhook may point inside the network, by its name or by what the name resolves to
    // (deliveries check again, after DNS, every time).
    const urls = body.webhooks?.urls ?? [];
    const urlProblems = await Promise.all(urls.map(async (url) => outboundUrlProblem(url, webhookAllowHosts) ?? (await outboundTargetProblem(url, { allowHosts: webhookAllowHosts }))));
    urlProblems.forEach((problem, i) => {
      if (problem) problems.push({ path: `webhooks.urls.${i}`, message: problem });
    });
    // A watermark must be an asset of this group: conversions would otherwise stamp another tenant's file.
    const watermark = body.conversions?.watermark_asset_id;
    if (watermark && !(await assets.existing(p, [watermark])).includes(watermark)) {
      problems.push({ path: 'conversions.watermark_asset_id', message: 'must be an asset of your group' });
    }
    if (problems.length > 0) throw validationFailed(problems);
    // Row lock: two concurrent PATCHes each see the other's change instead of overwriting it.
    const next = await withTransaction(pool, async (client) => {
      const repo = new SettingsRepository(client);
      const current = await repo.get(p.group_id, true);
      if (!current) throw settingsNotFound();
      const updated = applySettingsPatch(current, body);
      await repo.replace(p.group_id, updated);
      return updated;
    });
    // Workers reuse settings until they hear of a change: the notice is out before the caller can act on the
    // answer. The change is committed either way; a notice that cannot go out is bounded by their max age.
    await announce?.(p.group_id).catch((error: unknown) => logger.warn({ err: error, group_id: p.group_id }, 'settings change not announced'));
    res.json(next);
  });

  return router;
}
