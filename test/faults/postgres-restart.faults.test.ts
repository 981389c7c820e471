import { describeOutage, POSTGRES_OUTAGE } from './outage';

// PostgreSQL stops for 8 s under the running suite. The long version (a minute) is in test/soak/.
describeOutage(POSTGRES_OUTAGE);
