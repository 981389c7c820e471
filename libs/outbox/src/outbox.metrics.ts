import { counter, gauge } from '@dam/metrics';

/** Created on first use, so a process that never relays shows none of these series. */
export const outboxMetrics = () => ({
  published: counter({ name: 'outbox_published_total', help: 'Outbox rows published to JetStream by this relay' }),
  failures: counter({ name: 'outbox_publish_failures_total', help: 'Outbox publish attempts that failed (the row is retried)' }),
  unpublished: gauge({ name: 'outbox_unpublished_rows', help: 'Outbox rows not yet published, as of the last drain' }),
  oldestAge: gauge({
    name: 'outbox_oldest_unpublished_age_seconds',
    help: 'Age of the oldest unpublished outbox row as of the last drain (0 when none): the relay lag',
  }),
});
