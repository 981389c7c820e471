import { startSharedInfra } from './shared-infra';

/** Jest global setup (integration and e2e projects): PostgreSQL and S3 once per run, see shared-infra.ts. */
export async function globalSetup(): Promise<void> {
  await startSharedInfra();
}

// eslint-disable-next-line no-restricted-syntax -- jest loads a global setup module through its default export
export default globalSetup;
