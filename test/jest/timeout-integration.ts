import { scaled } from '../../libs/testing/src/time-scale';

// `testTimeout` is a global-only jest option and is ignored inside `projects`; set it per project here, stretched
// by TEST_TIME_SCALE like every other limit of the tests.
jest.setTimeout(scaled(60_000));
