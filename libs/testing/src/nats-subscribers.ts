import type { SubscriberIdentity } from '@dam/events';

/** The outside systems test servers have a user for: two, so a test can show one cannot touch the other's consumer. */
export const TEST_SUBSCRIBERS: readonly SubscriberIdentity[] = ['subscriber-example', 'subscriber-other'];
