/**
 * One setting for every time limit of the tests: `TEST_TIME_SCALE` (default 1; CI's `test/run-all.sh` sets it from
 * a measure of the machine, see docs/operations.md, "Tests on a slower machine"). A limit written in a test is what
 * the work needs on a reference machine of this project's kind, idle; the scale stretches it for a slower or busier
 * one, so that no test has to be edited for a machine. Limits only bound a wait for what should happen: a passing
 * test takes no longer at a larger scale.
 *
 * What is not scaled: times that are part of what a test checks (a link that expires after 2 s, a lease the test
 * itself gave a service), which the product measures in wall-clock time whatever the machine.
 */
export function timeScale(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TEST_TIME_SCALE;
  if (raw === undefined || raw.trim() === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1 || value > 100) {
    throw new Error(`TEST_TIME_SCALE must be a number from 1 to 100, got ${JSON.stringify(raw)}`);
  }
  return value;
}

const SCALE = timeScale();

/** `ms`, a limit on the reference machine, stretched by TEST_TIME_SCALE. */
export function scaled(ms: number): number {
  return Math.round(ms * SCALE);
}
