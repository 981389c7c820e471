import { describeOutage, NATS_OUTAGE } from './outage';

// NATS stops for 8 s under the running suite. The long version (a minute) is in test/soak/.
describeOutage(NATS_OUTAGE);
