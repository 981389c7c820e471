import type { ServiceSigner } from '@dam/auth-tokens';
import { unavailable } from '@dam/errors';
import { currentTraceHeaders } from '@dam/telemetry';
import type { ImageSettings } from '../domain/conversion-spec';

export interface GroupSettingsClientOptions {
  authUrl: string;
  /** This service's identity: auth answers settings (they hold the webhook secret) only to known workers. */
  signer: ServiceSigner;
  /** How long a group's settings are reused (default 30 s): a settings change applies to uploads after it. */
  ttlMs?: number;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Reads a group's settings from auth (`GET /internal/v1/groups/:id/settings`), the owner of the record.
 * Failures throw UNAVAILABLE so the message is nak'ed and retried later: converting with a guessed profile
 * would make the wrong outputs.
 */
export class GroupSettingsClient {
  private readonly cache = new Map<string, { value: ImageSettings; expires: number }>();
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly options: GroupSettingsClientOptions) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  async get(groupId: string): Promise<ImageSettings> {
    const hit = this.cache.get(groupId);
    if (hit && hit.expires > this.now()) return hit.value;
    const value = await this.fetchSettings(groupId);
    this.cache.set(groupId, { value, expires: this.now() + this.ttlMs });
    // Bounded: groups that stopped uploading do not pile up.
    if (this.cache.size > 10_000) this.evictExpired();
    return value;
  }

  private async fetchSettings(groupId: string): Promise<ImageSettings> {
    const url = new URL(`/internal/v1/groups/${encodeURIComponent(groupId)}/settings`, this.options.authUrl);
    let res: Response;
    try {
      // fetch is not auto-instrumented: pass the trace on by hand.
      const call = this.options.signer.headers({ audience: 'auth', method: 'GET', path: url.pathname });
      res = await fetch(url, { headers: { accept: 'application/json', ...currentTraceHeaders(), ...call }, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (error) {
      throw unavailable(`auth is unreachable for the settings of group ${groupId}: ${String(error)}`, 'SETTINGS_UNAVAILABLE');
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw unavailable(`auth answered ${res.status} for the settings of group ${groupId}`, 'SETTINGS_UNAVAILABLE');
    }
    const body: unknown = await res.json();
    if (typeof body !== 'object' || body === null) {
      throw unavailable(`auth answered settings of group ${groupId} that are not an object`, 'SETTINGS_UNAVAILABLE');
    }
    return body as ImageSettings;
  }

  private evictExpired(): void {
    const now = this.now();
    for (const [key, entry] of this.cache) if (entry.expires <= now) this.cache.delete(key);
  }
}
