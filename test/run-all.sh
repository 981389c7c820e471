#!/usr/bin/env bash
# The whole check, as CI runs it (`pnpm test:all`): typecheck, lint, the console's build, then every jest project.
# Every step runs even when an earlier one fails, so one run shows everything; the exit code is non-zero
# when any step failed. The last line is always "N passed, N failed" (jest's counts) for CI readers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CI=${CI:-true}
# Everything below runs on the project's pinned Node.js (deploy/infra/node-env.sh; deploy/infra/install-deps.sh
# installs it), whatever node the calling shell has: typecheck, lint, the console's build, jest and the service
# processes the tests start (they are spawned with the node that runs jest). deploy/test/runtime.unit.test.ts checks it.
# shellcheck source=../deploy/infra/node-env.sh
. deploy/infra/node-env.sh
echo "=== node $(node --version) ($(command -v node))"

# Every time limit of the tests is stretched by TEST_TIME_SCALE (libs/testing/src/time-scale.ts); unless given, it
# is measured here from how fast this machine runs a fixed workload now (test/time-scale.mjs), so a slower or
# busier machine gets more time without editing a test.
if [ -z "${TEST_TIME_SCALE:-}" ]; then TEST_TIME_SCALE=$(node test/time-scale.mjs --explain); fi
export TEST_TIME_SCALE
echo "=== TEST_TIME_SCALE=$TEST_TIME_SCALE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"

failed_steps=()
step() {
  local name=$1; shift
  echo "=== $name: $*"
  if "$@" </dev/null; then echo "=== $name: ok"; else echo "=== $name: FAILED"; failed_steps+=("$name"); fi
}

step typecheck pnpm typecheck
step lint pnpm lint

# The web console is bundled before the tests: the gateway serves web/console/dist and the browser test opens it.
step build-console pnpm build:console

results=$(mktemp -t dam-jest-XXXXXX.json)
rm -f "$results"
# --forceExit: a test that leaks a handle must not hang CI; test servers are still stopped by global teardown.
# The faults project (the suite while its infrastructure or services fail, about 5 minutes of test time) runs apart
# with `pnpm test:faults`, like the soak and production-form runs, so this run stays under 15 minutes.
step jest npx jest --ci --maxWorkers=2 --forceExit --selectProjects unit integration e2e --json --outputFile="$results"

if [ -s "$results" ]; then
  # A suite that fails to load has no failing tests of its own: count it as one failure.
  summary=$(node -e '
    const r = require(process.argv[1]);
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests + r.numRuntimeErrorTestSuites} failed`);
  ' "$results")
else
  echo "jest wrote no results (it failed before running tests, e.g. in global setup)"
  summary="0 passed, 1 failed"
fi
rm -f "$results"
[ ${#failed_steps[@]} -eq 0 ] || echo "failed steps: ${failed_steps[*]}"
echo "$summary"
[ ${#failed_steps[@]} -eq 0 ]
