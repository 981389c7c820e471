import { onProcessExit } from './cleanup';
import { startPostgresCluster, type RunningServer } from './postgres-cluster';
import { startS3Server } from './s3-server';

/**
 * Shared infrastructure for one jest run: started in global setup (the parent process), handed to test
 * files through environment variables that the workers inherit, stopped in global teardown.
 * Setup and teardown are loaded as separate modules, so the state lives on globalThis.
 */
interface SharedState {
  started: RunningServer[];
  removeExitHandler: () => void;
}
const KEY = Symbol.for('dam.testing.sharedInfra');
type Holder = { [KEY]?: SharedState };

export async function startSharedInfra(): Promise<void> {
  const holder = globalThis as Holder;
  if (holder[KEY]) return;
  const started: RunningServer[] = [];
  const removeExitHandler = onProcessExit(() => started.forEach((s) => s.stopSync()));
  holder[KEY] = { started, removeExitHandler };

  const tasks: Promise<void>[] = [];
  if (!process.env.DAM_TEST_PG_URL) {
    tasks.push(
      startPostgresCluster().then((pg) => {
        started.push(pg);
        process.env.DAM_TEST_PG_URL = pg.url;
      }),
    );
  }
  if (!process.env.DAM_TEST_S3_ENDPOINT && process.env.DAM_TEST_NO_S3 !== '1') {
    tasks.push(
      startS3Server().then((s3) => {
        started.push(s3);
        process.env.DAM_TEST_S3_ENDPOINT = s3.endpoint;
        process.env.DAM_TEST_S3_ACCESS_KEY = s3.accessKey;
        process.env.DAM_TEST_S3_SECRET_KEY = s3.secretKey;
      }),
    );
  }
  // Both start in parallel; if one fails, the other is still stopped by teardown (or at exit).
  const results = await Promise.allSettled(tasks);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stopSharedInfra();
    throw failed.reason;
  }
}

export async function stopSharedInfra(): Promise<void> {
  const holder = globalThis as Holder;
  const state = holder[KEY];
  if (!state) return;
  delete holder[KEY];
  await Promise.allSettled(state.started.map((s) => s.stop()));
  state.removeExitHandler();
}
