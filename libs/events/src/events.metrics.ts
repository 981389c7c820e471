import { counter, histogram } from '@dam/metrics';

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
