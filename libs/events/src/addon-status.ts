import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { z } from 'zod';
import { SUBJECT_ADDON_STATUS } from './subjects';

/** Where an addon's model is: still loading (its jobs wait), ready, or failed to load (with why). */
export const addonStateSchema = z.object({ state: z.enum(['loading', 'ready', 'failed']), reason: z.string().optional() });
export type AddonState = z.infer<typeof addonStateSchema>;
const statusReply = z.object({ addons: z.record(z.string(), addonStateSchema) });

/**
 * addon service: answers requests on `dam.rpc.addons.status` with the state of each addon's model (request and
 * reply, no stream: a replica that is down answers nothing). Returns the subscription (unsubscribe at shutdown).
 */
export function serveAddonStatus(nc: NatsConnection, status: () => Record<string, AddonState>): Subscription {
  return nc.subscribe(SUBJECT_ADDON_STATUS, {
    queue: 'addon-status',
    callback: (error, msg) => {
      if (!error) msg.respond(JSON.stringify({ addons: status() }));
    },
  });
}

/**
 * metadata: why an addon cannot run now, or undefined when it can or nobody knows (no addon replica answers: its job
 * waits in the queue for one). A replica's answer is kept for `cacheMs`.
 */
export function addonStatusClient(nc: NatsConnection, options: { timeoutMs?: number; cacheMs?: number } = {}): (addon: string) => Promise<string | undefined> {
  const timeout = options.timeoutMs ?? 1000;
  const cacheMs = options.cacheMs ?? 5000;
  let cached: { at: number; addons: Record<string, AddonState> } | undefined;
  return async (addon) => {
    if (!cached || Date.now() - cached.at > cacheMs) {
      try {
        const reply = await nc.request(SUBJECT_ADDON_STATUS, '', { timeout });
        cached = { at: Date.now(), addons: statusReply.parse(reply.json()).addons };
      } catch {
        return undefined;
      }
    }
    const state = cached.addons[addon];
    return state?.state === 'failed' ? (state.reason ?? `the ${addon} model could not load`) : undefined;
  };
}
