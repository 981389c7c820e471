/**
 * The NATS servers take a changed `dam-nats-auth` (a release's new permissions, a new subscriber, a rotated key) without
 * a restart: nats-server re-reads its configuration, the included auth.conf too, on a reload signal (SIGHUP), keeps
 * every connection and applies the new permissions to them. Nothing sends that signal by itself. This sidecar does:
 * it polls the mounted auth.conf (the kubelet swaps a changed Secret in within about a minute) and, when its content
 * changed, runs `nats-server --signal reload=<pid file>`. It runs the NATS image itself (no other image to pin) and
 * needs `shareProcessNamespace: true` on the pod (to signal the server) and the pid file's folder.
 *
 * A broken auth.conf is refused by the server, which keeps the configuration it has (it logs "Failed to reload").
 * Proven against a real nats-server: deploy/test/k8s-secrets-reload.unit.test.ts.
 */

/** How often the sidecar compares auth.conf with what the server has last been told to load. */
export const NATS_AUTH_POLL_SECONDS = 10;

/**
 * The sidecar's shell (POSIX sh: busybox in the image, dash here). Backquotes and no `$$`: Kubernetes rewrites `$(NAME)`
 * and `$$` in a container's command. The hash is taken at start (what the server started with), and is moved on only
 * once the server took the signal, so a signal sent before the server wrote its pid file is sent again.
 */
export function natsAuthReloaderScript(authConf: string, pidFile: string, pollSeconds: number | string = NATS_AUTH_POLL_SECONDS): string {
  return [
    `conf='${authConf}'; pid='${pidFile}'`,
    'last=`sha256sum < "$conf"`',
    'echo "watching $conf"',
    'while sleep ' + String(pollSeconds) + '; do',
    '  now=`sha256sum < "$conf"` || continue',
    '  [ "$now" = "$last" ] && continue',
    '  if nats-server --signal reload="$pid"; then echo "auth.conf changed: reload signalled"; last=$now; fi',
    'done',
  ].join('\n');
}

/** Where the NATS container mounts the Secret dam-nats-auth and keeps its pid file (deploy/k8s/generate.ts). */
export const NATS_AUTH_DIR = '/etc/nats/auth';
export const NATS_PID_FILE = '/var/run/nats/nats.pid';

/**
 * The sidecar container for the NATS StatefulSet; the pod needs `shareProcessNamespace: true`. `volumes` names the
 * pod's volumes of the auth Secret and of the pid file's folder.
 */
export function natsAuthReloaderContainer(opts: { image: string; volumes: { auth: string; run: string }; resources: object; securityContext: object }): object {
  return {
    name: 'auth-reloader',
    image: opts.image,
    command: ['/bin/sh', '-c', natsAuthReloaderScript(`${NATS_AUTH_DIR}/auth.conf`, NATS_PID_FILE)],
    resources: opts.resources,
    securityContext: opts.securityContext,
    volumeMounts: [
      { name: opts.volumes.auth, mountPath: NATS_AUTH_DIR, readOnly: true },
      { name: opts.volumes.run, mountPath: NATS_PID_FILE.slice(0, NATS_PID_FILE.lastIndexOf('/')), readOnly: true },
    ],
  };
}
