import { counter, gauge, histogram } from '@dam/metrics';

export type ConsumeOutcome = 'ack' | 'nak' | 'term' | 'dead_letter';

/** Created on first use, so a process that never consumes or relays shows none of these series. */
export const consumeMetrics = () => ({
  handled: counter<'durable' | 'outcome'>({
    name: 'events_messages_handled_total',
    help: 'JetStream messages handled per durable consumer, by outcome (ack, nak, term, dead_letter)',
    labelNames: ['durable', 'outcome'],
  }),
  duration: histogram<'durable'>({
    name: 'events_handler_duration_seconds',
    help: 'Time the handler of a durable consumer took per message (successful or not)',
    labelNames: ['durable'],
  }),
});

export const outboxMetrics = () => ({
  published: counter({ name: 'outbox_published_total', help: 'Outbox rows published to JetStream by this relay' }),
  failures: counter({ name: 'outbox_publish_failures_total', help: 'Outbox publish attempts that failed (the row is retried)' }),
  unpublished: gauge({ name: 'outbox_unpublished_rows', help: 'Outbox rows not yet published, as of the last drain' }),
  oldestAge: gauge({
    name: 'outbox_oldest_unpublished_age_seconds',
    help: 'Age of the oldest unpublished outbox row as of the last drain (0 when none): the relay lag',
  }),
});
