import { z } from 'zod';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  ASSET_PURGES,
  ASSET_PURGES_SUBJECTS,
  assetEventTypeOf,
  assetPurgeSchema,
  COLLECTIONS,
  COLLECTIONS_SUBJECTS,
  consumerWorker,
  DATA_SCHEMAS,
  DATA_SCHEMAS_SUBJECTS,
  dataSchemaSavedSchema,
  type ConsumerWorker,
} from '@dam/events';
import type { Logger } from '@dam/logging';
import type { ReadModel } from '../domain/ports';
import { applyAssetEvent, applyCollectionMessage, applyPurge, applySchemaSaved, assetEventEnvelope } from '../use-cases/apply-read-model.use-case';

/** One stream the read model follows: its durable consumer, what a message must be, and how it is applied. */
interface ReadModelFeed<S extends z.ZodType> {
  stream: string;
  durable: string;
  subjects: string | string[];
  schema: S;
  /** Messages in flight at once; 1 where the stream's order matters (a collection's or schema's last message is its state). */
  concurrency: number;
  apply: (model: ReadModel, body: z.infer<S>, subject: string) => Promise<unknown>;
}

const feed = <S extends z.ZodType>(f: ReadModelFeed<S>): ReadModelFeed<z.ZodType> => f as unknown as ReadModelFeed<z.ZodType>;

/** The read model's four durable consumers, every one from each stream's first message. */
export const READ_MODEL_FEEDS = [
  // Any asset event of any group; a subject that is no asset event type is skipped.
  feed({
    stream: ASSET_EVENTS,
    durable: 'search-index',
    subjects: ASSET_EVENTS_SUBJECTS,
    schema: assetEventEnvelope,
    concurrency: 8,
    apply: (model, e, subject) => (assetEventTypeOf(subject) ? applyAssetEvent(model, e) : Promise.resolve(false)),
  }),
  // Schemas as metadata saves them: their searchable paths, and the assets of each indexed again when one changes.
  feed({
    stream: DATA_SCHEMAS,
    durable: 'search-schemas',
    subjects: DATA_SCHEMAS_SUBJECTS,
    schema: dataSchemaSavedSchema,
    concurrency: 1,
    apply: applySchemaSaved,
  }),
  // Collections as metadata changes them, in stream order.
  feed({
    stream: COLLECTIONS,
    durable: 'search-collections',
    subjects: COLLECTIONS_SUBJECTS,
    schema: z.unknown(),
    concurrency: 1,
    apply: (model, body, subject) => applyCollectionMessage(model, subject, body),
  }),
  // Assets purged from the trash: gone from every search, the trash's included.
  feed({ stream: ASSET_PURGES, durable: 'search-purges', subjects: ASSET_PURGES_SUBJECTS, schema: assetPurgeSchema, concurrency: 2, apply: applyPurge }),
];

/** The workers of the read model, one per feed. */
export function readModelWorkers(nc: NatsConnection, model: ReadModel, logger: Logger): ConsumerWorker[] {
  return READ_MODEL_FEEDS.map((f) =>
    consumerWorker({
      nc,
      stream: f.stream,
      durable: f.durable,
      filterSubjects: f.subjects,
      schema: f.schema,
      deliverPolicy: 'all',
      concurrency: f.concurrency,
      handler: async (body, ctx) => {
        await f.apply(model, body, ctx.subject);
      },
      logger,
    }),
  );
}
