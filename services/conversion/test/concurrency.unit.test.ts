import { threadPoolSize } from '../src/concurrency';

describe('threadPoolSize', () => {
  it('is a thread per job and per transform slot, and two for files', () => {
    expect(threadPoolSize({})).toBe(8);
    expect(threadPoolSize({ CONCURRENCY: '8', TRANSFORM_CONCURRENCY: '3' })).toBe(13);
    expect(threadPoolSize({ CONCURRENCY: '1', TRANSFORM_CONCURRENCY: '1' })).toBe(4);
  });

  it("takes the defaults for what config.ts will refuse, and stays within libuv's 1024", () => {
    expect(threadPoolSize({ CONCURRENCY: 'x', TRANSFORM_CONCURRENCY: '0' })).toBe(8);
    expect(threadPoolSize({ CONCURRENCY: '-3', TRANSFORM_CONCURRENCY: '2.5' })).toBe(8);
    expect(threadPoolSize({ CONCURRENCY: '5000' })).toBe(1024);
  });
});
