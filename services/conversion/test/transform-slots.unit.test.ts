import { TransformsBusyError } from '../src/domain/conversion.errors';
import { transformSlots } from '../src/use-cases/transform-slots';

const limits = { concurrency: 2, queue: 2, queueWaitMs: 60_000, retryAfterSeconds: 2 };
const settled = (p: Promise<void>) =>
  p.then(
    () => 'taken',
    (e: unknown) => (e instanceof TransformsBusyError ? 'busy' : 'left'),
  );

describe('transform slots (issue 35): a bounded FIFO wait instead of an immediate refusal', () => {
  it('hands a freed slot to the first waiter, never runs more than the concurrency, and refuses past the queue', async () => {
    const slots = transformSlots(limits);
    const order: string[] = [];
    const [a, b] = [slots.request(), slots.request()];
    await Promise.all([a.taken, b.taken]);
    const c = slots.request();
    const d = slots.request();
    void c.taken.then(() => order.push('c'));
    void d.taken.then(() => order.push('d'));
    expect(await settled(slots.request().taken)).toBe('busy');
    expect(slots.stats()).toEqual({ running: 2, waiting: 2 });
    slots.release();
    await c.taken;
    expect(slots.stats()).toEqual({ running: 2, waiting: 1 });
    slots.release();
    await d.taken;
    expect(order).toEqual(['c', 'd']);
    slots.release();
    slots.release();
    expect(slots.stats()).toEqual({ running: 0, waiting: 0 });
  });

  it('lets a waiter leave: it is refused, takes no slot, and its place goes to the next caller', async () => {
    const slots = transformSlots({ ...limits, concurrency: 1, queue: 1 });
    await slots.request().taken;
    const waiter = slots.request();
    expect(waiter.leave()).toBe(true);
    expect(await settled(waiter.taken)).toBe('left');
    expect(waiter.leave()).toBe(false);
    const next = slots.request();
    expect(slots.stats()).toEqual({ running: 1, waiting: 1 });
    slots.release();
    expect(await settled(next.taken)).toBe('taken');
    expect(slots.stats()).toEqual({ running: 1, waiting: 0 });
  });

  it('refuses a waiter whose wait runs out, and TRANSFORM_QUEUE 0 refuses at once', async () => {
    const slots = transformSlots({ ...limits, concurrency: 1, queueWaitMs: 1 });
    await slots.request().taken;
    expect(await settled(slots.request().taken)).toBe('busy');
    expect(slots.stats()).toEqual({ running: 1, waiting: 0 });
    const none = transformSlots({ ...limits, concurrency: 1, queue: 0 });
    await none.request().taken;
    expect(await settled(none.request().taken)).toBe('busy');
  });
});
