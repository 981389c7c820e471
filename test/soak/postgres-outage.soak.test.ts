import { describeOutage, POSTGRES_OUTAGE } from '../faults/outage';

// PostgreSQL away for a minute under the running suite: past every ack wait (30 s) and job lease, so redeliveries and
// lease sweeps happen while it is gone; the same promises as the 8 s version in test/faults/.
describeOutage({ ...POSTGRES_OUTAGE, outageMs: 60_000 });
