/**
 * Security review F18 (issue 30): the local runner's default WEBHOOK_ALLOW_HOSTS. It was `127.0.0.1,localhost`,
 * which let every tenant admin name any loopback port as a webhook (plain http too, and `0x7f000001` spells
 * 127.0.0.1) and read each answer's status in the deliveries log: a port scanner of the machine. The default is
 * what deploy/local/env.sh exports when the variable is unset; auth's settings check (outboundUrlProblem, then
 * outboundTargetProblem, as `PATCH /api/v1/settings` runs them) and the webhook's delivery must refuse these.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { outboundUrlProblem, parseAllowHosts } from '../../libs/http/src/outbound-address';
import { guardedPost, OutboundError, outboundTargetProblem } from '../../libs/http/src/outbound-fetch';

const repoRoot = path.resolve(__dirname, '..', '..');

/** WEBHOOK_ALLOW_HOSTS as deploy/local/env.sh exports it to every service when the caller sets none. */
function localDefault(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-allow-'));
  const env: NodeJS.ProcessEnv = { ...process.env, DAM_DATA_DIR: dir };
  delete env['WEBHOOK_ALLOW_HOSTS'];
  try {
    // Secrets are not what is tested here: their generation (keys per service) is skipped.
    return execFileSync('bash', ['-c', '. deploy/local/env.sh && dam_secrets() { :; } && dam_export_env && printf %s "$WEBHOOK_ALLOW_HOSTS"'], {
      cwd: repoRoot,
      env,
      encoding: 'utf8',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What auth's settings check says of `url`: a problem (400 VALIDATION_FAILED) or undefined (accepted). */
const settingsCheck = async (url: string, allowHosts: readonly string[]) =>
  outboundUrlProblem(url, allowHosts) ?? (await outboundTargetProblem(url, { allowHosts }));

describe("the local runner's default WEBHOOK_ALLOW_HOSTS (F18)", () => {
  const oracle = [
    'http://127.0.0.1:8091/internal/v1/assets',
    'http://localhost:8222/varz',
    'https://0x7f000001/',
    'https://2130706433/',
    'https://127.1/',
    'https://localhost./',
    'http://127.0.0.1:7480/',
  ];

  it('lets no webhook URL reach loopback: the settings check refuses every port and spelling', async () => {
    const allowHosts = parseAllowHosts(localDefault());
    const verdicts = await Promise.all(oracle.map(async (url) => [url, await settingsCheck(url, allowHosts)]));
    expect(verdicts).toEqual(oracle.map((url) => [url, expect.stringMatching(/https|loopback|public host|address/)]));
  });

  it('and a delivery to them is refused before anything is sent', async () => {
    const allowHosts = parseAllowHosts(localDefault());
    for (const url of oracle) {
      const error = await guardedPost(url, { allowHosts, headers: {}, body: Buffer.from('{}'), timeoutMs: 2000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect([url, error instanceof OutboundError ? error.code : error]).toEqual([url, expect.stringMatching(/^(REFUSED_ADDRESS|BAD_URL)$/)]);
    }
  });
});
