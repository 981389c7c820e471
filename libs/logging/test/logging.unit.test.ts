import { Writable } from 'node:stream';
import { createLogger, runWithRequestId } from '../src';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON lines with service, level name and request id', () => {
    const { lines, destination } = capture();
    const log = createLogger({ service: 'svc', destination });
    runWithRequestId('req-1', () => log.info({ a: 1 }, 'hello'));
    log.info('outside');
    expect(lines[0]).toMatchObject({ service: 'svc', level: 'info', msg: 'hello', a: 1, request_id: 'req-1' });
    expect(lines[1]?.request_id).toBeUndefined();
  });

  it('redacts credentials', () => {
    const { lines, destination } = capture();
    const log = createLogger({ service: 'svc', destination });
    log.info({ req: { headers: { authorization: 'Bearer secret' } } }, 'r');
    expect(JSON.stringify(lines[0])).not.toContain('secret');
  });
});
