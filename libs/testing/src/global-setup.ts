import { startSharedInfra } from './shared-infra';

/** Jest global setup (integration and e2e projects): PostgreSQL and S3 once per run, see shared-infra.ts. */
export async function globalSetup(): Promise<void> {
  await startSharedInfra();
}

// Jest loads a global setup module through its default export; the one exception to "no default exports".
export default globalSetup;
