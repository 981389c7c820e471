import { isActiveContentType } from '../src/content-safety';

describe('isActiveContentType', () => {
  it.each([
    'text/html',
    'text/html; charset=utf-8',
    'application/xhtml+xml',
    'text/xml',
    'application/xml',
    'image/svg+xml',
    'application/rss+xml',
    'application/javascript',
    'text/javascript',
    'application/x-javascript',
    'TEXT/HTML',
    '',
    undefined,
  ])('%s is active', (type) => expect(isActiveContentType(type)).toBe(true));
  it.each(['image/png', 'image/jpeg', 'video/mp4', 'application/pdf', 'text/plain', 'application/octet-stream', 'application/json'])('%s is passive', (type) =>
    expect(isActiveContentType(type)).toBe(false),
  );
});
