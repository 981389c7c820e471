/**
 * What the webhook's autoscaler reads (KEDA's postgresql trigger, deploy/k8s): the deliveries due now, in flight
 * or waiting for a slot, heads only (what stands behind a head is not yet work). Receivers that answer slowly, or
 * never, keep it high, as does a backlog; the ASSET_EVENTS lag alone saw neither (security review F9). Read
 * through the index of due heads. No imports: the Kubernetes generator reads it.
 */
export const DUE_DELIVERIES_SQL = "SELECT count(*) FROM deliveries WHERE status = 'pending' AND head AND next_attempt_at <= now()";

/** Due deliveries per replica the autoscaler aims at: one replica's delivery slots (WEBHOOK_CONCURRENCY). */
export const DUE_DELIVERIES_PER_REPLICA = 32;
