import type { NatsConnection } from '@nats-io/nats-core';
import { consumerWorker, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { ReadModel } from '../domain/ports';
import { READ_MODEL_FEEDS, type ReadModelFeedName } from '../use-cases/apply-read-model.use-case';

/**
 * The read model's four durable consumers, every one from its stream's first message. `concurrency` is the messages
 * in flight at once: 1 where the stream's order matters (a collection's or schema's last message is its state).
 */
export const READ_MODEL_CONSUMERS: ReadonlyArray<{ feed: ReadModelFeedName; durable: string; concurrency: number }> = [
  { feed: 'events', durable: 'search-index', concurrency: 8 },
  { feed: 'schemas', durable: 'search-schemas', concurrency: 1 },
  { feed: 'collections', durable: 'search-collections', concurrency: 1 },
  { feed: 'purges', durable: 'search-purges', concurrency: 2 },
];

/** The workers of the read model, one per feed. */
export function readModelWorkers(nc: NatsConnection, model: ReadModel, logger: Logger): ConsumerWorker[] {
  return READ_MODEL_CONSUMERS.map(({ feed, durable, concurrency }) => {
    const f = READ_MODEL_FEEDS[feed];
    return consumerWorker({
      nc,
      stream: f.stream,
      durable,
      filterSubjects: f.subjects,
      schema: f.schema,
      deliverPolicy: 'all',
      concurrency,
      handler: async (body, ctx) => {
        await f.apply(model, body, ctx.subject);
      },
      logger,
    });
  });
}
