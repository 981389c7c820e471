import type { NatsConnection } from '@nats-io/nats-core';
import { consumerWorker, DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, dataSchemaSavedSchema, type ConsumerWorker, type DataSchemaSaved } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { SearchIndexRepository } from '../adapters/search-index.repository';

export const SCHEMAS_DURABLE = 'search-schemas';

export const applySchemaSaved = (index: SearchIndexRepository, s: DataSchemaSaved): Promise<boolean> =>
  index.saveSchema(s.group_id, s.schema_id, s.service_properties, s.updated_at);

/** Schemas as metadata saves them: their searchable paths, and the assets of each indexed again when one changes. */
export function dataSchemasWorker(nc: NatsConnection, index: SearchIndexRepository, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: DATA_SCHEMAS,
    durable: SCHEMAS_DURABLE,
    filterSubjects: DATA_SCHEMAS_SUBJECTS,
    schema: dataSchemaSavedSchema,
    deliverPolicy: 'all',
    concurrency: 1,
    handler: async (s) => {
      await applySchemaSaved(index, s);
    },
    logger,
  });
}
