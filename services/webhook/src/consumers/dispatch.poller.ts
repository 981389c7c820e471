import { startPoller, type Poller, type Worker } from '@dam/http';
import { deliveryDispatch, type DispatchDeps } from '../use-cases/dispatch-deliveries.use-case';

export const DISPATCH_POLLER = 'webhook-dispatcher';

/**
 * The dispatcher as webhook declares it to the shared start-up: a round every `intervalMs` (retries coming due), and
 * at once when woken (a delivery recorded, an attempt's slot freed); wakes during a round make one more round.
 * Stopping gives back what a round in flight took and waits for the attempts in flight.
 */
export function dispatchWorker(deps: Omit<DispatchDeps, 'onSlotFreed'> & { intervalMs: number }): { worker: Worker; wake(): void } {
  let poller: Poller | undefined;
  const wake = () => poller?.wake();
  const dispatch = deliveryDispatch({ ...deps, onSlotFreed: wake });
  return {
    wake,
    worker: {
      kind: 'poller',
      name: DISPATCH_POLLER,
      start() {
        const running = startPoller({ name: DISPATCH_POLLER, intervalMs: deps.intervalMs, logger: deps.logger, run: () => dispatch.round() });
        poller = running;
        return {
          async stop() {
            const settled = dispatch.stop();
            await running.stop();
            await settled;
          },
        };
      },
    },
  };
}
