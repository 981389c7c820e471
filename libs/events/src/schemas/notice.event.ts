import { z } from 'zod';

/**
 * Notices for Login's `notifications` (the specification: "messages since last login"): a service that records
 * something a user should hear about at their next login tells auth, which keeps the messages of each user
 * (`user_notifications`). One subject per kind, `dam.internal.notices.<kind>`, each published by its owner alone
 * through its outbox, in the transaction that records what happened; `id` is the Nats-Msg-Id and auth's key, so
 * a notice published or delivered twice becomes one message.
 */
export const SUBJECT_NOTICES_PREFIX = 'dam.internal.notices';
/** auth's filter: every kind of notice. */
export const NOTICES_FILTER = `${SUBJECT_NOTICES_PREFIX}.>`;

export const NOTICE_KINDS = ['job-failed', 'webhook-failed'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];
/** `dam.internal.notices.<kind>` */
export const noticeSubject = (kind: NoticeKind): string => `${SUBJECT_NOTICES_PREFIX}.${kind}`;
/** The kind a notice subject names, or undefined for any other subject. */
export function noticeKindOf(subject: string): NoticeKind | undefined {
  const prefix = `${SUBJECT_NOTICES_PREFIX}.`;
  if (!subject.startsWith(prefix)) return undefined;
  const kind = subject.slice(prefix.length);
  return (NOTICE_KINDS as readonly string[]).includes(kind) ? (kind as NoticeKind) : undefined;
}

/**
 * metadata → auth: a job a user asked for ended in ERROR (its asset, for processing and ingest jobs, is ERROR too).
 * Written by metadata's database in the statement that ends the job (migration 018), for the job's `created_by`.
 */
export const jobFailedNoticeSchema = z.object({
  id: z.string().min(1),
  kind: z.literal('job-failed'),
  group_id: z.number().int().positive(),
  /** Who asked for the job (its `created_by`): the one user told. */
  user_id: z.number().int().positive(),
  job_id: z.number().int().positive(),
  job_type: z.string().min(1),
  /** The name of the job's first asset, when it has one. */
  asset_name: z.string().nullable(),
  asset_count: z.number().int().nonnegative(),
  /** The job's error as Get Job shows it. */
  error: z.string().nullable(),
  /** When the job ended, ISO 8601. */
  at: z.string().min(1),
});
export type JobFailedNotice = z.infer<typeof jobFailedNoticeSchema>;

/**
 * webhook → auth: a delivery to one of the group's webhook URLs gave up after its last attempt. Told to the users
 * who manage the group's settings (where webhook URLs are set); auth keeps one message per URL between two logins.
 */
export const webhookFailedNoticeSchema = z.object({
  id: z.string().min(1),
  kind: z.literal('webhook-failed'),
  group_id: z.number().int().positive(),
  url: z.string().min(1),
  /** Attempts made before it gave up. */
  attempts: z.number().int().nonnegative(),
  /** The last attempt's error or HTTP status, as the delivery log shows it. */
  last_error: z.string().nullable(),
  event_type: z.string().min(1),
  asset_id: z.string(),
  at: z.string().min(1),
});
export type WebhookFailedNotice = z.infer<typeof webhookFailedNoticeSchema>;

export const noticeSchema = z.discriminatedUnion('kind', [jobFailedNoticeSchema, webhookFailedNoticeSchema]);
export type Notice = z.infer<typeof noticeSchema>;

export const NOTICE_SCHEMAS: { readonly [K in NoticeKind]: z.ZodType } = {
  'job-failed': jobFailedNoticeSchema,
  'webhook-failed': webhookFailedNoticeSchema,
};
