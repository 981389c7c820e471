import { PERMISSION, requireAny, type Principal } from '@dam/auth-tokens';
import { notFound, validationFailed, type ErrorDetail } from '@dam/errors';
import type { AssetDirectory, AuthStore } from '../domain/ports';
import { applySettingsPatch, type Settings, type SettingsPatch } from '../domain/settings';

export interface SettingsDeps {
  store: AuthStore;
  /** Asks metadata whether a watermark asset belongs to the caller's group. */
  assets: AssetDirectory;
  /** Why a webhook URL may not be called (inside the network, by its name or what it resolves to), or undefined. */
  webhookUrlProblem: (url: string) => Promise<string | undefined>;
  /** Announces a committed change to the services that keep group settings (before the answer goes out). */
  announce?: (groupId: number) => Promise<void>;
  onAnnounceFailed: (error: unknown, groupId: number) => void;
}

const settingsNotFound = () => notFound('SETTINGS_NOT_FOUND', 'Settings not found');

/** Reading is MANAGE_SETTINGS too: the record carries the webhook signing secret. */
export async function getSettings(store: AuthStore, p: Principal): Promise<Settings> {
  requireAny(p, [PERMISSION.MANAGE_SETTINGS]);
  const settings = await store.settings.get(p.group_id);
  if (!settings) throw settingsNotFound();
  return settings;
}

/**
 * Applies a patch (MANAGE_SETTINGS): no webhook may point inside the network (CONTRACT §11; deliveries check again,
 * after DNS, every time), and a watermark must be an asset of this group (conversions would otherwise stamp another
 * tenant's file). Read and written under a row lock: two concurrent PATCHes each see the other's change.
 */
export async function patchSettings(deps: SettingsDeps, p: Principal, patch: SettingsPatch): Promise<Settings> {
  requireAny(p, [PERMISSION.MANAGE_SETTINGS]);
  const problems: ErrorDetail[] = [];
  const urlProblems = await Promise.all((patch.webhooks?.urls ?? []).map((url) => deps.webhookUrlProblem(url)));
  urlProblems.forEach((problem, i) => {
    if (problem) problems.push({ path: `webhooks.urls.${i}`, message: problem });
  });
  const watermark = patch.conversions?.watermark_asset_id;
  if (watermark && !(await deps.assets.existing(p, [watermark])).includes(watermark)) {
    problems.push({ path: 'conversions.watermark_asset_id', message: 'must be an asset of your group' });
  }
  if (problems.length > 0) throw validationFailed(problems);
  const next = await deps.store.transaction(async (tx) => {
    const current = await tx.settings.get(p.group_id, true);
    if (!current) throw settingsNotFound();
    const updated = applySettingsPatch(current, patch);
    await tx.settings.replace(p.group_id, updated);
    return updated;
  });
  // Workers reuse settings until they hear of a change: the notice is out before the caller can act on the
  // answer. The change is committed either way; a notice that cannot go out is bounded by their max age.
  await deps.announce?.(p.group_id).catch((error: unknown) => deps.onAnnounceFailed(error, p.group_id));
  return next;
}
