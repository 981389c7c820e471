import type { JetStreamClient, PubAck } from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { injectTraceContext } from '@dam/telemetry';
import type { z } from 'zod';
import { parsePayload } from './errors';

export interface PublishOptions {
  /** De-duplication id (`Nats-Msg-Id`): the event id, so a retried publish is stored once. */
  msgId: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Validates, then publishes and waits for the stream's ack. Throws `InvalidEventPayloadError` before anything
 * is sent when the payload does not match. The returned ack says `duplicate: true` when JetStream had the
 * msgId already (not an error: the event is on the stream once).
 */
export async function publishEvent<S extends z.ZodType>(
  js: JetStreamClient,
  subject: string,
  schema: S,
  payload: z.input<S>,
  options: PublishOptions,
): Promise<PubAck> {
  const parsed = parsePayload(subject, schema, payload);
  return js.publish(subject, JSON.stringify(parsed), {
    msgID: options.msgId,
    headers: buildHeaders(options.headers),
    ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
  });
}

/** NATS headers from a record, plus `traceparent` of the active context unless the record carries one. */
export function buildHeaders(record: Record<string, string> = {}): MsgHdrs {
  const hdrs = natsHeaders();
  if (!record.traceparent) injectTraceContext(hdrs);
  for (const [key, value] of Object.entries(record)) hdrs.set(key, value);
  return hdrs;
}
