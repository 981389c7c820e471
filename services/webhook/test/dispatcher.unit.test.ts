import { createLogger } from '@dam/logging';
import { waitFor } from '@dam/testing';
import type { DeliveryRepository, DueDelivery } from '../src/adapters/delivery.repository';
import { Dispatcher } from '../src/adapters/dispatcher';

const delivery: DueDelivery = { id: 1, assetId: 'a1', webhookId: 'msg_1', groupId: 7, eventType: 'file-saved', url: 'http://receiver/hook', attempts: 0, body: '{}' };

describe('the webhook dispatcher', () => {
  it('keeps running when an attempt cannot be recorded (PostgreSQL away): logged, no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let claims = 0;
    const repo = {
      claimDue: async () => (++claims === 1 ? [delivery] : []),
      release: async () => undefined,
      finishAttempt: async () => {
        throw new Error('connection terminated');
      },
    } as unknown as DeliveryRepository;
    const warnings: Array<Record<string, unknown>> = [];
    const logger = createLogger({ service: 'webhook-test', level: 'silent' });
    logger.warn = ((obj: Record<string, unknown>) => void warnings.push(obj)) as typeof logger.warn;
    const posts: string[] = [];
    const running = new Dispatcher({
      repo,
      settings: async () => ({ urls: [delivery.url], secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
      post: async (url) => {
        posts.push(url);
        return { status: 200 };
      },
      retryDelaysMs: [0],
      timeoutMs: 1000,
      concurrency: 2,
      perUrlConcurrency: 1,
      perGroupConcurrency: 1,
      intervalMs: 20,
      logger,
    }).start();
    try {
      await waitFor(() => warnings.length > 0, { description: 'the unrecorded attempt logged' });
      // It goes on claiming: the process was not ended by the failure.
      const before = claims;
      await waitFor(() => claims > before + 1, { description: 'later claims' });
      expect(posts).toEqual([delivery.url]);
      expect(warnings[0]).toMatchObject({ delivery: 1, err: expect.objectContaining({ message: 'connection terminated' }) });
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
    } finally {
      await running.stop();
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
