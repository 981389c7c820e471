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

/** An asset event as the webhook service keeps it. */
export interface LoggedEvent {
  id: string;
  groupId: number;
  assetId: string;
  type: string;
  time: string;
  seq: number;
  /** From the asset data; undefined for deletion payloads (the asset's creator is then looked up). */
  creatorId?: number;
  body: string;
}

/** One delivery taken for an attempt. */
export interface DueDelivery {
  id: number;
  assetId: string;
  webhookId: string;
  groupId: number;
  eventType: string;
  url: string;
  attempts: number;
  body: string;
}

export interface AttemptResult {
  status?: number;
  error?: string;
  durationMs: number;
  delivered: boolean;
  /** When the next attempt is due (ms from now); undefined: no attempt left, the delivery failed. */
  retryInMs?: number;
}

/**
 * What one attempt of a delivery that had `attemptsDone` attempts before it comes to: delivered on 200, 201 or
 * 202; otherwise (another answer, none, a refusal) failed, with the next attempt on the schedule while one is left.
 */
export function attemptResult(answer: { status?: number; error?: string }, attemptsDone: number, delays: readonly number[], durationMs: number): AttemptResult {
  const delivered = answer.status !== undefined && DELIVERED_STATUSES.has(answer.status);
  const error = answer.error ?? (delivered || answer.status === undefined ? undefined : `the receiver answered ${answer.status}`);
  const retryInMs = delivered ? undefined : nextAttemptDelay(attemptsDone + 1, delays);
  return {
    delivered,
    durationMs,
    ...(answer.status !== undefined ? { status: answer.status } : {}),
    ...(error ? { error } : {}),
    ...(retryInMs !== undefined ? { retryInMs } : {}),
  };
}

/** The delivery's state once an attempt is recorded: a retry keeps it pending (and the head of its chain). */
export const statusAfter = (result: AttemptResult): 'delivered' | 'failed' | 'pending' =>
  result.delivered ? 'delivered' : result.retryInMs === undefined ? 'failed' : 'pending';

/** The log's view of a delivery (`GET /api/v1/webhooks/deliveries`). */
export interface DeliveryView {
  id: number;
  webhook_id: string;
  event: string;
  asset_id: string;
  url: string;
  status: string;
  attempt_count: number;
  response_code: number | null;
  error: string | null;
  next_retry_at: string | null;
  reissue_job_id: number | null;
  created_at: string;
  finished_at: string | null;
  attempts: Array<{ attempt: number; at: string; response_code: number | null; error: string | null; duration_ms: number }>;
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
