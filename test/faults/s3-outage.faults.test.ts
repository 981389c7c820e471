import { describeOutage, S3_OUTAGE } from './outage';

// S3 goes away for 8 s under the running suite. The long version (a minute) is in test/soak/.
describeOutage(S3_OUTAGE);
