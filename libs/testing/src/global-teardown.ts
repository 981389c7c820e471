import { stopSharedInfra } from './shared-infra';

/** Jest global teardown: stops only what global setup started (never servers given through DAM_TEST_*). */
export async function globalTeardown(): Promise<void> {
  await stopSharedInfra();
}

// Jest loads a global teardown module through its default export; the one exception to "no default exports".
export default globalTeardown;
