import { unavailable } from '@dam/errors';
import { internalClient, type InternalClient, type InternalClientOptions } from './client';
import { groupSettingsResponse, INTERNAL_PATHS } from './schemas';

/** A group's settings record as auth keeps it (CONTRACT §3); each reader picks and checks what it needs. */
export type GroupSettings = Record<string, unknown>;

/** Auth's notices of settings changes (followSettingsChanges in @dam/events). */
export interface SettingsChanges {
  /** Notices can arrive now (subscribed, connected). */
  live(): boolean;
  /** `groupId`'s settings changed; without one, any group's may have. */
  onChange(listener: (groupId?: string) => void): void;
}

export interface GroupSettingsClientOptions {
  authUrl: string;
  /** This service's identity: auth answers settings (they hold the webhook secret) only to known workers. */
  signer: InternalClientOptions['signer'];
  /**
   * How long a group's settings are reused without notices (default 0: read fresh every time, so a change applies
   * at once).
   */
  ttlMs?: number;
  /** Auth's change notices: while they can arrive, settings are reused until their group's notice (or `maxAgeMs`). */
  changes?: SettingsChanges;
  /** The longest settings are reused while following notices (default 300000), a bound on a notice lost anyway. */
  maxAgeMs?: number;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Reads a group's settings from auth (`GET /internal/v1/groups/:id/settings`), the owner of the record.
 * Failures throw UNAVAILABLE (503 to a request, a retry to a consumer): acting on guessed settings would make
 * the wrong outputs or let a bulk delete past the group's limits. With `changes`, a group's settings are read
 * once and reused until auth announces a change of that group: a job or event then costs no call to auth, and a
 * change still applies to the next one.
 */
export class GroupSettingsClient {
  /** `followed`: kept on the strength of notices, so good only while they can arrive. */
  private readonly cache = new Map<string, { value: GroupSettings; expires: number; followed: boolean }>();
  private readonly ttlMs: number;
  private readonly maxAgeMs: number;
  private readonly changes: SettingsChanges | undefined;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly auth: InternalClient;
  /** Counts notices: a read that a notice overtook is used once but not kept (it may predate the change). */
  private noticesSeen = 0;

  constructor(options: GroupSettingsClientOptions) {
    this.auth = internalClient({ baseUrl: options.authUrl, audience: 'auth', signer: options.signer });
    this.ttlMs = options.ttlMs ?? 0;
    this.maxAgeMs = options.maxAgeMs ?? 300_000;
    this.changes = options.changes;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.changes?.onChange((groupId) => {
      this.noticesSeen += 1;
      if (groupId === undefined) this.cache.clear();
      else this.cache.delete(groupId);
    });
  }

  async get(groupId: string): Promise<GroupSettings> {
    const hit = this.cache.get(groupId);
    if (hit && hit.expires > this.now() && (!hit.followed || this.changes?.live())) return hit.value;
    const seen = this.noticesSeen;
    const value = await this.fetchSettings(groupId);
    const followed = this.changes?.live() === true;
    const keepMs = followed ? this.maxAgeMs : this.ttlMs;
    if (keepMs > 0 && seen === this.noticesSeen) {
      this.cache.set(groupId, { value, expires: this.now() + keepMs, followed });
      // Bounded: groups that stopped uploading do not pile up.
      if (this.cache.size > 10_000) this.evictExpired();
    }
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

/**
 * The client as each settings reader builds it: auth at `AUTH_URL`, kept per `groupSettingsEnv` (@dam/config),
 * following auth's notices (`followSettingsChanges` in @dam/events) when given.
 */
export function groupSettingsClient(
  config: { AUTH_URL: string; SETTINGS_CACHE_MS: number; SETTINGS_MAX_AGE_MS: number },
  signer: GroupSettingsClientOptions['signer'],
  changes?: SettingsChanges,
): GroupSettingsClient {
  return new GroupSettingsClient({
    authUrl: config.AUTH_URL,
    signer,
    ttlMs: config.SETTINGS_CACHE_MS,
    maxAgeMs: config.SETTINGS_MAX_AGE_MS,
    ...(changes ? { changes } : {}),
  });
}
