/**
 * One layout inside every service (issue 32; docs/architecture.md, "Inside a service"): routes in http/, the rules of an
 * operation in use-cases/, pure rules, types and ports in domain/, their implementations in adapters/. The use cases
 * and the domain reach nothing outside through anything but a port.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const SERVICES = readdirSync(path.join(ROOT, 'services'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const FOLDERS = ['http', 'consumers', 'use-cases', 'domain', 'adapters', 'migrations'];
/** What a use case or the domain must not import: the outer layers, and the clients of the outside world. */
const OUTSIDE = /from '(\.\.\/(adapters|http|consumers)\/[^']*|express|pg|minio|@nats-io\/[^']*)'/;

const filesIn = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? filesIn(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
      )
    : [];

describe('one layout inside every service', () => {
  it.each(SERVICES)('%s: only the known folders, and every use case in use-cases/', (service) => {
    const src = path.join(ROOT, 'services', service, 'src');
    const folders = readdirSync(src, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((f) => !FOLDERS.includes(f))).toEqual([]);
    const misplaced = filesIn(src).filter((f) => f.endsWith('.use-case.ts') && path.basename(path.dirname(f)) !== 'use-cases');
    expect(misplaced.map((f) => path.relative(ROOT, f))).toEqual([]);
  });

  it.each(SERVICES)('%s: use cases and domain import no adapter, route, consumer or outside client', (service) => {
    const src = path.join(ROOT, 'services', service, 'src');
    const offending = [...filesIn(path.join(src, 'use-cases')), ...filesIn(path.join(src, 'domain'))].flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /^import /.test(line) && !/^import type /.test(line) && OUTSIDE.test(line))
        .map((line) => `${path.relative(ROOT, file)}: ${line}`),
    );
    expect(offending).toEqual([]);
  });

  it.each(SERVICES)('%s: beside the tests only harness.ts and fixtures.ts (the gateway: its OpenAPI tables too)', (service) => {
    const dir = path.join(ROOT, 'services', service, 'test');
    const allowed = (name: string) =>
      /\.(unit|int)\.test\.ts$/.test(name) || name === 'harness.ts' || name === 'fixtures.ts' || (service === 'gateway' && name.startsWith('openapi-'));
    expect(
      filesIn(dir)
        .filter((f) => !allowed(path.basename(f)))
        .map((f) => path.relative(ROOT, f)),
    ).toEqual([]);
  });
});
