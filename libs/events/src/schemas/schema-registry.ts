import type { z } from 'zod';
import { assetEventTypeOf, jobCommandSubject, jobReportSubject, JOB_WORKERS } from '../subjects';
import { assetPurgeSchema } from './asset-purge.event';
import { collectionMembershipSchema, collectionStateSchema } from './collection.event';
import { dataSchemaSavedSchema } from './data-schema.event';
import { ASSET_EVENT_SCHEMAS } from './asset-event.schema';
import { jobCommandSchema, jobReportSchema } from './jobs.event';
import { NOTICE_KINDS, NOTICE_SCHEMAS, noticeSubject } from './notice.event';
import { usageRecordSchema } from './usage.event';

const INTERNAL_SCHEMAS: Record<string, z.ZodType> = {
  ...Object.fromEntries(JOB_WORKERS.map((w) => [jobReportSubject(w), jobReportSchema])),
  ...Object.fromEntries(JOB_WORKERS.map((w) => [jobCommandSubject(w), jobCommandSchema])),
  ...Object.fromEntries(NOTICE_KINDS.map((k) => [noticeSubject(k), NOTICE_SCHEMAS[k]])),
};

/** The schema that every message on `subject` must satisfy, or undefined for a subject nobody defined. */
export function schemaForSubject(subject: string): z.ZodType | undefined {
  const type = assetEventTypeOf(subject);
  if (type) return ASSET_EVENT_SCHEMAS[type];
  if (/^dam\.schemas\.[^.]+\.\d+$/.test(subject)) return dataSchemaSavedSchema;
  if (/^dam\.collections\.[^.]+\.asset\.[^.]+$/.test(subject)) return collectionMembershipSchema;
  if (/^dam\.collections\.[^.]+\.collection\.[^.]+$/.test(subject)) return collectionStateSchema;
  if (/^dam\.purges\.[^.]+$/.test(subject)) return assetPurgeSchema;
  if (/^dam\.internal\.usage\.[a-z_]+$/.test(subject)) return usageRecordSchema;
  return INTERNAL_SCHEMAS[subject];
}
