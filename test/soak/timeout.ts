import { scaled } from '../../libs/testing/src/time-scale';

// A soak scenario runs for minutes; each test sets its own bound below this one.
jest.setTimeout(scaled(30 * 60_000));
