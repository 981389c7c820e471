import { AppError, notFound, rangeNotSatisfiable, rateLimited, validationFailed } from '@dam/errors';
import { mapError } from '../src/errors';

describe('mapError', () => {
  it.each([
    ['BAD_REQUEST', 400],
    ['VALIDATION', 400],
    ['UNAUTHENTICATED', 401],
    ['FORBIDDEN', 403],
    ['NOT_FOUND', 404],
    ['CONFLICT', 409],
    ['PAYLOAD_TOO_LARGE', 413],
    ['RANGE_NOT_SATISFIABLE', 416],
    ['RATE_LIMITED', 429],
  ] as const)('maps %s to %i with the contract body', (kind, status) => {
    const mapped = mapError(new AppError(kind, 'SOME_CODE', 'text'));
    expect(mapped.status).toBe(status);
    expect(mapped.body).toEqual({ error: { code: 'SOME_CODE', message: 'text' } });
  });

  it('keeps validation details as path/message pairs', () => {
    const mapped = mapError(validationFailed([{ path: 'data.title', message: 'Required' }]));
    expect(mapped.body.error.details).toEqual([{ path: 'data.title', message: 'Required' }]);
  });

  it('carries Retry-After and Content-Range headers', () => {
    expect(mapError(rateLimited(2.2)).headers).toEqual({ 'Retry-After': '3' });
    expect(mapError(rangeNotSatisfiable(10)).headers).toEqual({ 'Content-Range': 'bytes */10' });
  });

  it('maps body-parser failures to 400 and 413', () => {
    expect(mapError(Object.assign(new SyntaxError('x'), { type: 'entity.parse.failed', status: 400 })).body.error.code).toBe('INVALID_JSON');
    expect(mapError(Object.assign(new Error('x'), { type: 'entity.too.large', status: 413 })).status).toBe(413);
  });

  it('hides unexpected errors behind an error id', () => {
    const mapped = mapError(new Error('db password is hunter2'));
    expect(mapped.status).toBe(500);
    expect(mapped.body.error.code).toBe('INTERNAL_ERROR');
    expect(mapped.errorId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(mapped.body)).not.toContain('hunter2');
    expect(mapError(undefined).status).toBe(500);
  });

  it('keeps 404 codes', () => {
    expect(mapError(notFound('ASSET_NOT_FOUND', 'no')).body.error.code).toBe('ASSET_NOT_FOUND');
  });
});
