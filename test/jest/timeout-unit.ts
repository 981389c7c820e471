import { scaled } from '../../libs/testing/src/time-scale';

// Jest's own default (5 s), stretched by TEST_TIME_SCALE like every other limit of the tests.
jest.setTimeout(scaled(5_000));
