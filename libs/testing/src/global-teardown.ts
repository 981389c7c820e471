import { stopSharedInfra } from './shared-infra';

/** Jest global teardown: stops only what global setup started (never servers given through DAM_TEST_*). */
export async function globalTeardown(): Promise<void> {
  await stopSharedInfra();
}

// eslint-disable-next-line no-restricted-syntax -- jest loads a global teardown module through its default export
export default globalTeardown;
