import { Webhook } from 'standardwebhooks';
import type { GroupSettings } from '@dam/internal-api';

/** Answers that count as delivered (CONTRACT §10); anything else, or none in time, is a failed attempt. */
export const DELIVERED_STATUSES: ReadonlySet<number> = new Set([200, 201, 202]);

/**
 * When the next attempt is due after `attemptsDone` attempts, in ms from now, or undefined when none is left.
 * `delays[i]` is the wait before attempt i + 1 (the first is normally 0).
 */
export function nextAttemptDelay(attemptsDone: number, delays: readonly number[]): number | undefined {
  return attemptsDone < delays.length ? delays[attemptsDone] : undefined;
}

/** What the deliveries of a group need from its settings (CONTRACT §3, §10). */
export interface WebhookSettings {
  urls: string[];
  /** Every secret that signs now: the current one, then the replaced one during its 24 hours of overlap. */
  secrets: string[];
}

export function webhookSettingsOf(settings: GroupSettings, now = Date.now()): WebhookSettings {
  const w = (settings.webhooks ?? {}) as { urls?: unknown; secret?: unknown; previous_secret?: unknown; previous_secret_expires_at?: unknown };
  const urls = Array.isArray(w.urls) ? w.urls.filter((u): u is string => typeof u === 'string') : [];
  const secrets = typeof w.secret === 'string' ? [w.secret] : [];
  const until = typeof w.previous_secret_expires_at === 'string' ? Date.parse(w.previous_secret_expires_at) : NaN;
  if (typeof w.previous_secret === 'string' && until > now) secrets.push(w.previous_secret);
  return { urls, secrets };
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` holds one `v1,<base64>` per secret (space
 * separated), each an HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed by the secret's decoded bytes.
 */
export function signedHeaders(input: { webhookId: string; eventType: string; body: string; secrets: readonly string[]; at: Date }): Record<string, string> {
  const signatures = input.secrets.map((secret) => new Webhook(secret).sign(input.webhookId, input.at, input.body));
  return {
    'content-type': 'application/json',
    'webhook-id': input.webhookId,
    'webhook-timestamp': String(Math.floor(input.at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
    'x-asset-event': input.eventType,
  };
}
