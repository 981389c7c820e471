import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { nextAttemptDelay, signedHeaders, webhookSettingsOf } from '../src/domain/delivery';

const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

describe('the retry schedule', () => {
  it('waits the listed time before each attempt and has none left after the last', () => {
    const delays = [0, 10_000, 60_000];
    expect([0, 1, 2, 3].map((done) => nextAttemptDelay(done, delays))).toEqual([0, 10_000, 60_000, undefined]);
  });
});

describe('webhook settings', () => {
  it('signs with the current secret, and the replaced one only until its overlap ends', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    const settings = (until: string) => ({
      webhooks: { urls: ['https://a.example.com/h', 7], secret: 'whsec_new', previous_secret: 'whsec_old', previous_secret_expires_at: until },
    });
    expect(webhookSettingsOf(settings('2026-11-24T11:00:00Z'), now)).toEqual({ urls: ['https://a.example.com/h'], secrets: ['whsec_new', 'whsec_old'] });
    expect(webhookSettingsOf(settings('2026-11-23T11:59:59Z'), now).secrets).toEqual(['whsec_new']);
    expect(webhookSettingsOf({}, now)).toEqual({ urls: [], secrets: [] });
  });
});

describe('signed headers', () => {
  it('carry one v1 signature per secret, each accepted by the Standard Webhooks library, and the event name', () => {
    const [a, b] = [secret(), secret()];
    const body = JSON.stringify({ id: 'x', status: 'OK' });
    const headers = signedHeaders({ webhookId: 'msg_1', eventType: 'file-processed', body, secrets: [a, b], at: new Date() });
    expect(headers['x-asset-event']).toBe('file-processed');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    for (const s of [a, b]) expect(new Webhook(s).verify(body, headers)).toEqual({ id: 'x', status: 'OK' });
    expect(() => new Webhook(a).verify(`${body} `, headers)).toThrow();
  });
});
