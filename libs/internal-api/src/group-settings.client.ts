import { unavailable } from '@dam/errors';
import { internalClient, type InternalClient, type InternalClientOptions } from './client';
import { groupSettingsResponse, INTERNAL_PATHS } from './schemas';

/** A group's settings record as auth keeps it (CONTRACT §3); each reader picks and checks what it needs. */
export type GroupSettings = Record<string, unknown>;

export interface GroupSettingsClientOptions {
  authUrl: string;
  /** This service's identity: auth answers settings (they hold the webhook secret) only to known workers. */
  signer: InternalClientOptions['signer'];
  /** How long a group's settings are reused (default 0: read fresh every time, so a change applies at once). */
  ttlMs?: number;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Reads a group's settings from auth (`GET /internal/v1/groups/:id/settings`), the owner of the record.
 * Failures throw UNAVAILABLE (503 to a request, a retry to a consumer): acting on guessed settings would make
 * the wrong outputs or let a bulk delete past the group's limits.
 */
export class GroupSettingsClient {
  private readonly cache = new Map<string, { value: GroupSettings; expires: number }>();
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly auth: InternalClient;

  constructor(options: GroupSettingsClientOptions) {
    this.auth = internalClient({ baseUrl: options.authUrl, audience: 'auth', signer: options.signer });
    this.ttlMs = options.ttlMs ?? 0;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  async get(groupId: string): Promise<GroupSettings> {
    const hit = this.cache.get(groupId);
    if (hit && hit.expires > this.now()) return hit.value;
    const value = await this.fetchSettings(groupId);
    this.cache.set(groupId, { value, expires: this.now() + this.ttlMs });
    // Bounded: groups that stopped uploading do not pile up.
    if (this.cache.size > 10_000) this.evictExpired();
    return value;
  }

  private async fetchSettings(groupId: string): Promise<GroupSettings> {
    const res = await this.auth
      .call({ method: 'GET', path: INTERNAL_PATHS.groupSettings(groupId), response: groupSettingsResponse, timeoutMs: this.timeoutMs })
      .catch((error: unknown) => {
        throw unavailable(`auth is unreachable for the settings of group ${groupId}: ${String(error)}`, 'SETTINGS_UNAVAILABLE');
      });
    if (!res.ok) throw unavailable(`auth answered ${res.status} for the settings of group ${groupId}`, 'SETTINGS_UNAVAILABLE');
    return res.body;
  }

  private evictExpired(): void {
    const now = this.now();
    for (const [key, entry] of this.cache) if (entry.expires <= now) this.cache.delete(key);
  }
}
