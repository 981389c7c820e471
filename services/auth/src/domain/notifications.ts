import { PERMISSION, permissionsFor, ROLES } from '@dam/auth-tokens';
import type { Notice } from '@dam/events';

/** At most this many messages in one Login answer: the newest, oldest first (the older unseen ones are dropped). */
export const NOTIFICATIONS_PER_LOGIN = 50;

/** One message for one user, as Login returns it. */
export interface NewNotification {
  userId: number;
  message: string;
  /** Messages of one topic between two logins are one: the latest, with a count (a webhook URL that keeps failing). */
  topic?: string;
  /** When it happened (a notice's own time, ISO 8601); now by default. Messages are shown in this order. */
  at?: string;
}

/** Who is told of a notice: one user, or the users of a group whose role carries a permission. */
export type Audience = { userId: number; groupId: number } | { groupId: number; roleIds: number[] };

/** The users who can act on a failing webhook: those who may change the group's settings (where its URLs are). */
export const WEBHOOK_AUDIENCE_ROLES: number[] = Object.values(ROLES).filter((r) => permissionsFor(r).includes(PERMISSION.MANAGE_SETTINGS));

const MAX_DETAIL = 300;
/** A reason as other services wrote it, one line and bounded. */
const clip = (text: string | null | undefined, fallback: string): string => {
  const line = (text ?? '').replace(/\s+/g, ' ').trim();
  if (!line) return fallback;
  return line.length > MAX_DETAIL ? `${line.slice(0, MAX_DETAIL - 1)}…` : line;
};

/** A URL without what may be a secret: no user or password, query or fragment. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return clip(url.split(/[?#]/)[0], 'a webhook URL');
  }
}

const JOB_NOUNS: Record<string, string> = {
  processing: 'processing',
  ingest: 'ingest',
  addon: 'addon run',
  bulk_delete: 'bulk delete',
  purge: 'purge',
  cdn_prefetch: 'CDN prefetch',
  cdn_purge: 'CDN purge',
  reissue_callbacks: 'callback reissue',
};

/** What a failed job was, in words: "processing of photo.jpg", "bulk delete of 12 assets". */
function jobWhat(n: Extract<Notice, { kind: 'job-failed' }>): string {
  const noun = JOB_NOUNS[n.job_type] ?? n.job_type.replace(/_/g, ' ');
  if (n.asset_name && n.asset_count <= 1) return `${noun} of ${clip(n.asset_name, 'an asset')}`;
  if (n.asset_count > 1) return `${noun} of ${n.asset_count} assets`;
  return noun;
}

/** The message a notice makes and who hears it. Human sentences naming the thing; never a secret. */
export function messageOf(n: Notice): { audience: Audience; message: string; topic?: string; at: string } {
  switch (n.kind) {
    case 'job-failed':
      return {
        audience: { userId: n.user_id, groupId: n.group_id },
        at: n.at,
        message: `Job ${n.job_id} (${jobWhat(n)}) failed: ${clip(n.error, 'no reason given')}`,
      };
    case 'webhook-failed': {
      const url = shownUrl(n.url);
      return {
        audience: { groupId: n.group_id, roleIds: WEBHOOK_AUDIENCE_ROLES },
        message: `Webhook ${url} failed ${n.attempts} times; last error: ${clip(n.last_error, 'unknown')}`,
        topic: `webhook:${url}`,
        at: n.at,
      };
    }
  }
}

/** The message as Login shows it: a topic's message that stands for several says how many more. */
export const shownMessage = (message: string, repeats: number): string =>
  repeats > 1 ? `${message} (and ${repeats - 1} more like it since your last login)` : message;

export const apiKeyDisabledMessage = (name: string): string => `API key '${clip(name, 'unnamed')}' was disabled`;
