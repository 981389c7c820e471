import {
  ASSET_EVENT_SCHEMAS,
  assetDataSchema,
  assetEventSchema,
  assetEventSubject,
  assetEventTypeOf,
  conversionsCompletedSchema,
  FILE_DELETED,
  FILE_PROCESSED,
  FILE_SAVED,
  jobCommandSchema,
  jobCommandSubject,
  jobReportSchema,
  schemaForSubject,
  SUBJECT_JOB_REPORTS,
  jobReportSubject,
} from '../src';
import { assetData, fileSavedEvent } from './fixtures';

describe('asset data format', () => {
  it('accepts every field of the spec, keeping extra core metadata', () => {
    const value = assetData({
      status: 'OK',
      metadata: { width: 1, height: 2, exif: { iso: 100 } },
      conversions: { smart_imaging: { width: 100, height: 80, size: 999, public: true }, '720p-video': { width: null, height: null, size: 5, public: false } },
      errors: { deepzoom: 'failed' },
      urls: { public: { smart_imaging: 'http://x/y' } },
    });
    const parsed = assetDataSchema.parse(value);
    expect(parsed.metadata).toEqual({ width: 1, height: 2, exif: { iso: 100 } });
    expect(parsed.conversions['720p-video']?.width).toBeNull();
  });

  it.each([
    ['an unknown status', { status: 'DONE' }],
    ['a fractional size', { size: 1.5 }],
    ['a negative size', { size: -1 }],
    ['a non-ISO time', { upload_time: 'yesterday' }],
    ['a string creator id', { creator_id: '7' }],
    ['a conversion without public', { conversions: { a: { width: 1, height: 1, size: 1 } } }],
    ['non-integer width', { metadata: { width: 1.2 } }],
  ])('rejects %s', (_name, patch) => {
    expect(assetDataSchema.safeParse({ ...assetData(), ...patch }).success).toBe(false);
  });

  it('requires every mandatory field', () => {
    for (const key of [
      'id',
      'status',
      'name',
      'size',
      'checksum',
      'content_type',
      'creator_id',
      'upload_time',
      'update_time',
      'metadata',
      'data',
      'conversions',
      'addons_info',
    ]) {
      const value: Record<string, unknown> = { ...assetData() };
      delete value[key];
      expect({ key, ok: assetDataSchema.safeParse(value).success }).toEqual({ key, ok: false });
    }
  });
});

describe('envelopes', () => {
  it('accepts a file-saved envelope and rejects it under another type', () => {
    expect(FILE_SAVED.schema.parse(fileSavedEvent()).type).toBe('file-saved');
    expect(FILE_PROCESSED.schema.safeParse(fileSavedEvent()).success).toBe(false);
  });

  it('rejects a missing envelope field', () => {
    const { time: _time, ...noTime } = fileSavedEvent();
    expect(FILE_SAVED.schema.safeParse(noTime).success).toBe(false);
    const { version: _version, ...noVersion } = fileSavedEvent();
    expect(FILE_SAVED.schema.safeParse(noVersion).success).toBe(false);
    expect(FILE_SAVED.schema.safeParse({ ...fileSavedEvent(), version: 0 }).success).toBe(false);
  });

  it('carries the deletion payload on file-deleted', () => {
    const event = {
      ...fileSavedEvent(),
      type: 'file-deleted',
      data: { id: 'a'.repeat(32), event: 'file-deleted', keys: ['original'], status: 'OK', message: 'deleted' },
    };
    expect(FILE_DELETED.schema.safeParse(event).success).toBe(true);
    expect(FILE_DELETED.schema.safeParse({ ...event, data: assetData() }).success).toBe(false);
  });

  it('discriminates the union by type', () => {
    const parsed = assetEventSchema.parse(fileSavedEvent());
    expect(parsed.type).toBe('file-saved');
    expect(assetEventSchema.safeParse({ ...fileSavedEvent(), type: 'file-exploded' }).success).toBe(false);
    expect(Object.keys(ASSET_EVENT_SCHEMAS)).toHaveLength(6);
  });
});

describe('job commands and reports', () => {
  const command = {
    id: 'job-1-run-0',
    job_id: 1,
    attempt: 0,
    type: 'processing',
    group_id: '1',
    asset_id: 'a1',
    source_checksum: 'abc',
    content_type: 'image/png',
  };
  it('accepts a command, with or without keys, and refuses one without a job id', () => {
    expect(jobCommandSchema.safeParse(command).success).toBe(true);
    expect(jobCommandSchema.safeParse({ ...command, keys: ['thumb'] }).success).toBe(true);
    const { job_id: _omitted, ...bad } = command;
    expect(jobCommandSchema.safeParse(bad).success).toBe(false);
  });
  it('accepts progress and final reports, refusing progress over 100 and unknown states', () => {
    const progress = {
      id: 'p1',
      job_id: 1,
      attempt: 0,
      group_id: '1',
      asset_id: 'a1',
      worker: 'conversion@h:1',
      state: 'PROGRESS',
      step: 'conversions',
      progress: 40,
    };
    expect(jobReportSchema.safeParse(progress).success).toBe(true);
    expect(jobReportSchema.safeParse({ ...progress, progress: 101 }).success).toBe(false);
    expect(jobReportSchema.safeParse({ ...progress, state: 'PAUSED' }).success).toBe(false);
  });
});

describe('conversions-completed', () => {
  const report = {
    id: 'r1',
    asset_id: 'a1',
    group_id: 'g1',
    source_checksum: 'abc',
    image: { width: 10, height: 20 },
    conversions: { smart_imaging: { object_key: 'conversions/g1/a1/abc/smart_imaging.jpg', content_type: 'image/jpeg', width: 5, height: 10, size: 100 } },
    errors: { deepzoom: 'boom' },
  };
  it('accepts a report and a non-image report', () => {
    expect(conversionsCompletedSchema.safeParse(report).success).toBe(true);
    expect(conversionsCompletedSchema.safeParse({ ...report, image: null, conversions: {} }).success).toBe(true);
  });
  it('rejects a conversion without object key', () => {
    const bad = { ...report, conversions: { x: { content_type: 'image/jpeg', width: 1, height: 1, size: 1 } } };
    expect(conversionsCompletedSchema.safeParse(bad).success).toBe(false);
  });
});

describe('subjects', () => {
  it('builds and parses asset event subjects', () => {
    expect(assetEventSubject('1', 'file-processed')).toBe('assets.events.1.file-processed');
    expect(assetEventSubject(42, 'file-saved')).toBe('assets.events.42.file-saved');
    expect(assetEventTypeOf('assets.events.1.file-processed')).toBe('file-processed');
    expect(assetEventTypeOf('assets.events.1.nope')).toBeUndefined();
    expect(assetEventTypeOf('dam.internal.jobs.reports')).toBeUndefined();
  });
  it.each(['a.b', '*', '>', '', 'a b'])('refuses the group id %p as a subject token', (groupId) => {
    expect(() => assetEventSubject(groupId, 'file-saved')).toThrow();
  });
  it('finds the schema of a subject', () => {
    expect(schemaForSubject('assets.events.9.file-saved')).toBe(FILE_SAVED.schema);
    expect(schemaForSubject(jobReportSubject('conversion'))).toBe(jobReportSchema);
    // Reports come on each worker kind's subject only.
    expect(schemaForSubject(SUBJECT_JOB_REPORTS)).toBeUndefined();
    expect(schemaForSubject(jobCommandSubject('conversion'))).toBe(jobCommandSchema);
    expect(schemaForSubject('dam.internal.unknown')).toBeUndefined();
  });
});
