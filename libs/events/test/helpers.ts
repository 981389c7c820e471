import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { renderMetrics, sampleValue } from '@dam/metrics';
import { scaled } from '@dam/testing';
import type { EventLogger } from '../src';

export interface CapturedLog {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg?: string;
}

export function captureLogger(): EventLogger & { lines: CapturedLog[] } {
  const lines: CapturedLog[] = [];
  const at = (level: CapturedLog['level']) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Polls `check` until it holds; `timeoutMs` is stretched by TEST_TIME_SCALE. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function streamMessages(nc: NatsConnection, stream: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(stream)).state.messages;
}

/** The current value of one sample of the process registry (0 when the series does not exist yet). */
export async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleValue((await renderMetrics()).body, name, labels) ?? 0;
}
