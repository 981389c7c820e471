import { Writable } from 'node:stream';
import { createLogger, redactUrl, runWithRequestId } from '../src';

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

describe('redactUrl', () => {
  it('hides the values of credential parameters, whatever their case or escaping', () => {
    expect(redactUrl('/api/v1/auth/validate?_jwt=eyJ.a.b')).toBe('/api/v1/auth/validate?_jwt=[redacted]');
    expect(redactUrl('/up?UploadKey=k1&name=a&%5Fjwt=x#frag')).toBe('/up?UploadKey=[redacted]&name=a&%5Fjwt=[redacted]#frag');
    expect(redactUrl('/d?key=original&signature=abc&expires=1')).toBe('/d?key=original&signature=[redacted]&expires=1');
    expect(redactUrl('/plain/path')).toBe('/plain/path');
  });

  it('hides upload keys, service tokens and cookies in logged headers', () => {
    const { lines, destination } = capture();
    const log = createLogger({ service: 'svc', destination });
    log.info({ req: { headers: { 'x-upload-key': 'uk-secret', 'x-dam-service-token': 'st-secret', cookie: 'c-secret' } } }, 'r');
    expect(JSON.stringify(lines[0])).not.toMatch(/secret/);
  });
});
