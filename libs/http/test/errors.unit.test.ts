import { AppError, isDependencyUnavailable, notFound, rangeNotSatisfiable, rateLimited, unavailable, validationFailed } from '@dam/errors';
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

  it('gives every 503 a Retry-After (issue 35): 5 s unless the refusal set its own', () => {
    expect(mapError(unavailable('The upload journal is unavailable', 'UPLOAD_JOURNAL_UNAVAILABLE'))).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '5' },
    });
    expect(mapError(new AppError('UNAVAILABLE', 'TRANSFORMS_BUSY', 'busy', undefined, { 'Retry-After': '2' })).headers).toEqual({ 'Retry-After': '2' });
    expect(mapError(new AppError('UNAVAILABLE', 'X', 'y', undefined, { 'retry-after': '9' })).headers).toEqual({ 'retry-after': '9' });
    expect(mapError(notFound('ASSET_NOT_FOUND', 'no')).headers).toEqual({});
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

describe('a dependency that is down is a 503, not a 500', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  it.each([
    ['a refused connection', refused],
    [
      'both addresses of localhost refused (AggregateError)',
      new AggregateError([refused, Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })]),
    ],
    ['PostgreSQL shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['PostgreSQL starting up (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['node-postgres losing its connection', new Error('Connection terminated unexpectedly')],
    ['the pool waiting in vain', new Error('timeout exceeded when trying to connect')],
    ['a refused connection as the cause', new Error('fetch failed', { cause: refused })],
    ["NATS down (@dam/events' NatsUnavailableError)", Object.assign(new Error('NATS cannot be reached'), { code: 'NATS_UNAVAILABLE' })],
  ])('%s', (_name, err) => {
    const mapped = mapError(err);
    expect(mapped.status).toBe(503);
    expect(mapped.body).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    expect(mapped.headers['Retry-After']).toBe('5');
    expect(mapped.errorId).toBeUndefined();
  });

  it('leaves other errors as they were: a bug is a 500, a SQL error of the query too', () => {
    expect(mapError(new TypeError('x is undefined')).status).toBe(500);
    expect(mapError(Object.assign(new Error('syntax error'), { code: '42601' })).status).toBe(500);
    expect(mapError(new AggregateError([refused, new TypeError('bug')])).status).toBe(500);
    expect(isDependencyUnavailable(undefined)).toBe(false);
  });
});
