/**
 * The PostgreSQL side of events: the transactional outbox (write in the business transaction, relay to
 * JetStream in commit order) and the inbox of processed message ids. Only services with a database use it;
 * @dam/events (schemas, subjects, NATS) stays free of PostgreSQL.
 */
export { OUTBOX_LOCK_KEY, OUTBOX_MIGRATION_SQL, startOutboxRelay, writeOutbox, type OutboxEntry, type OutboxRelay, type OutboxRelayOptions } from './outbox';
export { claimMessage, INBOX_MIGRATION_SQL } from './inbox';
