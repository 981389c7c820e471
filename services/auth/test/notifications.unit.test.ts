import { messageOf, shownMessage, shownUrl, WEBHOOK_AUDIENCE_ROLES } from '../src/domain/notifications';

// The sentences of Login's notifications (issue 32): they name the thing and never carry a secret.
describe("Login's notification messages", () => {
  const job = {
    id: 'n',
    kind: 'job-failed',
    group_id: 1,
    user_id: 5,
    job_id: 42,
    job_type: 'processing',
    asset_name: 'photo.jpg',
    asset_count: 1,
    error: 'bad',
    at: '2026-11-27T10:00:00.000Z',
  } as const;

  it('names the job, what it was about, and why', () => {
    expect(messageOf(job)).toEqual({ audience: { userId: 5, groupId: 1 }, message: 'Job 42 (processing of photo.jpg) failed: bad', at: job.at });
    expect(messageOf({ ...job, job_type: 'cdn_purge', asset_name: null, asset_count: 0, error: '  line one\n line two ' }).message).toBe(
      'Job 42 (CDN purge) failed: line one line two',
    );
    expect(messageOf({ ...job, job_type: 'future_kind', asset_name: null, asset_count: 3 }).message).toBe('Job 42 (future kind of 3 assets) failed: bad');
    expect(messageOf({ ...job, error: 'x'.repeat(1000) }).message.length).toBeLessThan(360);
  });

  it('shows a webhook URL without userinfo, query or fragment, to the roles that manage settings', () => {
    expect(shownUrl('https://u:p@hooks.example.com:8443/a/b?token=t#f')).toBe('https://hooks.example.com:8443/a/b');
    expect(shownUrl('not a url?secret=1')).toBe('not a url');
    const m = messageOf({
      id: 'w',
      kind: 'webhook-failed',
      group_id: 2,
      url: 'https://h.example/x?k=1',
      attempts: 8,
      last_error: null,
      event_type: 'file-saved',
      asset_id: 'a',
      at: job.at,
    });
    expect(m).toEqual({
      audience: { groupId: 2, roleIds: WEBHOOK_AUDIENCE_ROLES },
      message: 'Webhook https://h.example/x failed 8 times; last error: unknown',
      topic: 'webhook:https://h.example/x',
      at: job.at,
    });
    expect(WEBHOOK_AUDIENCE_ROLES).toEqual([1]);
  });

  it('says how many more a message stands for', () => {
    expect(shownMessage('m', 1)).toBe('m');
    expect(shownMessage('m', 3)).toBe('m (and 2 more like it since your last login)');
  });
});
