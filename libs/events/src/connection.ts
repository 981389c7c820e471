import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { isTransientJetStreamError } from './nats';

/**
 * How long a call waits for a lost connection to come back before it gives up: a cluster client reconnects to
 * another node within milliseconds, a lone server that is down does not come back in this time.
 */
export const RECONNECT_GRACE_MS = 1500;

/**
 * NATS cannot be reached now (the connection is down, or was lost while the call waited for its answer). Its
 * `code` makes the HTTP layer answer 503 with Retry-After, as for any other dependency that is down.
 */
export class NatsUnavailableError extends Error {
  readonly code = 'NATS_UNAVAILABLE';
  constructor(message = 'NATS cannot be reached', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NatsUnavailableError';
  }
}

/**
 * JetStream refused a write for want of room: the stream or KV bucket is at its `max_bytes` ("maximum bytes
 * exceeded", a limit that refuses new entries: the KV buckets, DATA_SCHEMAS, COLLECTIONS) or the server's
 * `max_file_store` is used up ("insufficient resources"). Nothing the client did and nothing retrying at once mends
 * (entries expire, or an operator raises NATS_STREAMS_MAX_BYTES): a NatsUnavailableError, so a request path answers
 * 503 with Retry-After, and its message says which.
 */
export class JetStreamFullError extends NatsUnavailableError {
  constructor(cause: unknown) {
    super(
      `JetStream has no room for this write (${cause instanceof Error ? cause.message : String(cause)}): a stream or KV bucket at its max_bytes, or the server's max_file_store full`,
      { cause },
    );
    this.name = 'JetStreamFullError';
  }
}

const FULL = /maximum bytes exceeded|insufficient resources/i;
/** True for JetStream's refusal of a write for want of room (see JetStreamFullError). */
export const isJetStreamFull = (error: unknown): boolean =>
  error instanceof JetStreamFullError || FULL.test(error instanceof Error ? error.message : String(error));

/** The call was still waiting for its answer when the connection went down. */
class ConnectionLostError extends Error {}

/**
 * The state of one connection, from its status events. Why it matters: while the client is disconnected, what a
 * caller sends is only buffered, and the client discards that buffer when it reconnects (nats-core's
 * `ProtocolHandler.prepare()`), so an ack, a nak or a publish sent then is lost without an error, and a request
 * waits out its whole timeout. Callers ask here first, and wait for the reconnection or fail at once.
 */
export interface ConnectionWatch {
  connected(): boolean;
  /** True as soon as the connection is up (at once when it is), false after `timeoutMs` or once it is closed. */
  whenConnected(timeoutMs: number): Promise<boolean>;
  /** `operation`'s outcome, or a rejection as soon as the connection goes down while it is pending. */
  untilDisconnected<T>(operation: Promise<T>): Promise<T>;
  /** Told every time the connection goes down (false) or comes back (true), `connected()` already answering so. */
  onChange(listener: (up: boolean) => void): void;
}

const watches = new WeakMap<NatsConnection, ConnectionWatch>();

/**
 * The watch of `nc`, started on first use. connectNats starts it at once; a connection made elsewhere and
 * already down when first asked about reads as up until its next status event.
 */
export function connectionWatch(nc: NatsConnection): ConnectionWatch {
  const known = watches.get(nc);
  if (known) return known;
  let up = !nc.isClosed();
  let closed = nc.isClosed();
  const onUp = new Set<() => void>();
  const onDown = new Set<() => void>();
  const listeners = new Set<(up: boolean) => void>();
  const fire = (set: Set<() => void>) => {
    for (const f of [...set]) f();
    set.clear();
  };
  const down = () => {
    up = false;
    fire(onDown);
    for (const listener of listeners) listener(false);
  };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'staleConnection' || status.type === 'forceReconnect') down();
      else if (status.type === 'reconnect') {
        up = true;
        fire(onUp);
        for (const listener of listeners) listener(true);
      }
    }
  })().catch(() => undefined);
  void nc.closed().then(() => {
    closed = true;
    down();
    fire(onUp);
  });

  const watch: ConnectionWatch = {
    connected: () => up && !closed,
    onChange: (listener) => void listeners.add(listener),
    whenConnected(timeoutMs) {
      if (up && !closed) return Promise.resolve(true);
      if (closed || timeoutMs <= 0) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          onUp.delete(done);
          resolve(up && !closed);
        };
        const timer = setTimeout(done, timeoutMs);
        timer.unref();
        onUp.add(done);
      });
    },
    untilDisconnected<T>(operation: Promise<T>): Promise<T> {
      if (!up || closed) {
        operation.catch(() => undefined);
        return Promise.reject(new ConnectionLostError('the NATS connection is down'));
      }
      let lost: () => void = () => undefined;
      const dropped = new Promise<never>((_, reject) => {
        lost = () => reject(new ConnectionLostError('the NATS connection went down while waiting for an answer'));
        onDown.add(lost);
      });
      operation.catch(() => undefined);
      return Promise.race([operation, dropped]).finally(() => onDown.delete(lost));
    },
  };
  watches.set(nc, watch);
  return watch;
}

/** The connection a JetStream client was made from (the client keeps it; its type says so only on the implementation). */
export function connectionOf(js: JetStreamClient): NatsConnection | undefined {
  return (js as unknown as { nc?: NatsConnection }).nc;
}

export interface NatsCallOptions {
  /**
   * How long leader elections (timeouts, no responders while connected) and lost connections are retried:
   * 0 (the default) tries once, as a request path should.
   */
  retryMs?: number;
  /** How long each attempt first waits for a lost connection to come back (RECONNECT_GRACE_MS by default). */
  graceMs?: number;
}

/**
 * Runs one NATS call (a request, a JetStream publish or KV operation) only while connected: it waits up to
 * `graceMs` for a lost connection to come back, fails at once when the connection goes while it waits for the
 * answer, and retries transient failures for `retryMs`. What it cannot do in time ends as a
 * NatsUnavailableError (503 on a request path), never as a request that waits out its timeout in vain; so does a
 * write JetStream has no room for (JetStreamFullError, not retried). The call may be made again, so it must be
 * repeatable (a publish with its msgId, a KV create or an update at a revision).
 */
export async function natsCall<T>(nc: NatsConnection, call: () => Promise<T>, options: NatsCallOptions = {}): Promise<T> {
  const watch = connectionWatch(nc);
  const graceMs = options.graceMs ?? RECONNECT_GRACE_MS;
  const deadline = Date.now() + (options.retryMs ?? 0);
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    if (!(await watch.whenConnected(graceMs))) throw new NatsUnavailableError();
    try {
      return await watch.untilDisconnected(call());
    } catch (error) {
      const lost = error instanceof ConnectionLostError;
      if (!lost && isJetStreamFull(error)) throw new JetStreamFullError(error);
      if (!lost && !isTransientJetStreamError(error)) throw error;
      if (Date.now() + (lost ? 0 : delay) > deadline) {
        throw new NatsUnavailableError(lost ? error.message : `NATS did not answer in time: ${String(error)}`, { cause: error });
      }
      if (!lost) await new Promise((r) => setTimeout(r, delay));
    }
  }
}
