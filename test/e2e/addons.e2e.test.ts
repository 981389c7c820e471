/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { FILE_DELETED } from '@dam/events';
import { makeVideo, waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { ALL_SERVICES, useSuite } from './suite';

const e2e = useSuite({}, { services: ALL_SERVICES });
const { call, upload, settled } = e2e.api;

describe('addons through the suite (CONTRACT §6)', () => {
  it('extracts the text of an image as a job, keeps the result and marks the addon available', async () => {
    const page = await sharp(
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="160"><rect width="100%" height="100%" fill="white"/>' +
          '<text x="30" y="100" font-family="DejaVu Sans, sans-serif" font-size="48" fill="black">Invoice number 4711 paid</text></svg>',
      ),
    )
      .png()
      .toBuffer();
    const id = await upload(page, 'scan.png');
    expect((await settled(id)).status).toBe('OK');
    expect(await call('GET', `/api/v1/assets/${id}/addons/text_extraction`)).toMatchObject({
      status: 404,
      body: { error: { code: 'ADDON_RESULT_NOT_FOUND' } },
    });
    const runs = async () => (await call('GET', '/api/v1/usage/addon_runs?user_id=1')).body.total as number;
    const before = await runs();
    const run = await call('POST', `/api/v1/assets/${id}/addons/text_extraction`);
    expect(run).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 60_000,
      description: 'the addon job',
    });
    expect((await call('GET', `/api/v1/assets/${id}/addons/text_extraction`)).body).toEqual({
      text: 'Invoice number 4711 paid',
      words: ['Invoice', 'number', '4711', 'paid'],
    });
    expect((await call('GET', `/api/v1/assets/${id}/data`)).body.addons_info.text_extraction).toEqual({ available: true });
    // The run counts in the usage statistics of who asked (CONTRACT §9).
    await waitFor(async () => (await runs()) === before + 1, { description: 'the addon run counted' });
    // Search finds the picture by a word in it (the name says nothing of it).
    await waitFor(
      async () => {
        const r = await call('POST', '/api/v1/assets/search', { query: 'invoice' });
        return (r.body?.results as any[] | undefined)?.some((a) => a.id === id) ? true : undefined;
      },
      { description: 'the OCR words in search' },
    );
  });

  it('answers 404 to an unknown addon and 400 to an image addon on a video', async () => {
    const image = await upload(
      await sharp({ create: { width: 64, height: 64, channels: 3, background: '#123' } })
        .png()
        .toBuffer(),
      'flat.png',
    );
    await settled(image);
    expect(await call('POST', `/api/v1/assets/${image}/addons/teleport`)).toMatchObject({ status: 404, body: { error: { code: 'ADDON_NOT_FOUND' } } });
    expect((await call('GET', `/api/v1/assets/${image}/addons/teleport`)).status).toBe(404);
    expect(await call('POST', `/api/v1/assets/${image}/addons/storyboard`)).toMatchObject({ status: 400, body: { error: { code: 'ADDON_NOT_APPLICABLE' } } });
    const video = await upload(await makeVideo({ seconds: 1, width: 320, height: 240 }), 'clip.mp4');
    await settled(video);
    expect(await call('POST', `/api/v1/assets/${video}/addons/text_extraction`)).toMatchObject({
      status: 400,
      body: { error: { code: 'ADDON_NOT_APPLICABLE' } },
    });
  });

  it("runs the group's automatic image addons with the upload: the asset is OK only once their results exist, with one file-processed (CONTRACT §16)", async () => {
    const events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
    e2e.beforeStop(() => events.close());
    expect((await call('PATCH', '/api/v1/settings', { addons: { auto: { image: ['text_extraction'] } } })).status).toBe(200);
    const page = await sharp(
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="900" height="160"><rect width="100%" height="100%" fill="white"/>' +
          '<text x="30" y="100" font-family="DejaVu Sans, sans-serif" font-size="48" fill="black">Automatic reading works</text></svg>',
      ),
    )
      .png()
      .toBuffer();
    // The addon job is opened with the asset, in one transaction. metadata hears of the settings change by a notice:
    // an upload it registered before the notice arrived runs no addon, and another is sent.
    const addonJobOf = async (id: string) =>
      ((await call('GET', '/api/v1/jobs?type=addon&page_size=100')).body.items as any[]).find((j) => j.asset_ids.includes(id));
    const id = await waitFor(
      async () => {
        const candidate = await upload(page, 'auto.png');
        return (await addonJobOf(candidate)) ? candidate : undefined;
      },
      { description: 'an upload that opened its automatic addon' },
    );
    // Whenever it is no longer NOT_READY, the addon's result exists.
    const data = await settled(id);
    expect(data.status).toBe('OK');
    expect(data.addons_info.text_extraction).toEqual({ available: true });
    expect(Object.keys(data.conversions).length).toBeGreaterThan(0);
    expect((await call('GET', `/api/v1/assets/${id}/addons/text_extraction`)).body.text).toBe('Automatic reading works');
    expect((await addonJobOf(id)).status).toBe('COMPLETED');
    // One file-processed, sent after all of it: it lists the addon, and search can index its words from it.
    const processed = await waitFor(() => events.seen.find((e) => e.asset_id === id && e.type === 'file-processed'), { description: 'file-processed' });
    expect((processed.envelope as any).data).toMatchObject({ status: 'OK', addons_info: { text_extraction: { available: true } } });
    expect((processed.envelope as any).addon_terms.words).toEqual(['Automatic', 'reading', 'works']);
    expect(events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed')).toHaveLength(1);
    expect((await call('PATCH', '/api/v1/settings', { addons: { auto: { image: [] } } })).status).toBe(200);
  });

  it('tags a photograph with the objects in it, and search finds it by its tag and counts it in the tags facet', async () => {
    const id = await upload(readFileSync(path.join(__dirname, '..', 'fixtures', 'images', 'coffee.jpg')), 'morning.jpg');
    await settled(id);
    const run = await call('POST', `/api/v1/assets/${id}/addons/auto_tagging`);
    expect(run.status).toBe(202);
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 60_000,
      description: 'the tagging job',
    });
    const tags = (await call('GET', `/api/v1/assets/${id}/addons/auto_tagging`)).body;
    expect(tags.best_guess).toEqual(['cup']);
    expect(tags.labels[0]).toEqual({ label: 'cup', confidence: expect.any(Number) });
    await waitFor(
      async () => {
        const r = await call('POST', '/api/v1/assets/search', { query: 'cup', facets: ['tags'] });
        return (r.body?.results as any[] | undefined)?.some((a) => a.id === id) ? r : undefined;
      },
      { description: 'the tag in search' },
    );
    const facet = (await call('POST', '/api/v1/assets/search', { query: 'cup', facets: ['tags'] })).body.facets.tags as Array<{ value: string; count: number }>;
    expect(facet).toContainEqual({ value: 'cup', count: 1 });
  });

  it("deletes an addon's result with a conversion in one Delete: Get Data stops listing it, its result answers 404, file-deleted names the keys (CONTRACT §16)", async () => {
    const events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
    e2e.beforeStop(() => events.close());
    const id = await upload(readFileSync(path.join(__dirname, '..', 'fixtures', 'images', 'coffee.jpg')), 'breakfast.jpg');
    const conversion = Object.keys((await settled(id)).conversions)[0] as string;
    expect(conversion).toBeDefined();
    const run = await call('POST', `/api/v1/assets/${id}/addons/auto_tagging`);
    expect(run.status).toBe(202);
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 60_000,
      description: 'the tagging job',
    });
    expect((await call('GET', `/api/v1/assets/${id}/data`)).body.addons_info.auto_tagging).toEqual({ available: true });
    const foundByTag = async () =>
      ((await call('POST', '/api/v1/assets/search', { query: 'cup' })).body?.results as any[] | undefined)?.find((a) => a.id === id);
    await waitFor(foundByTag, { description: 'the tag in search' });

    // text_extraction never ran on it: ignored, as a conversion key the asset does not have is.
    const keys = [conversion, 'auto_tagging', 'text_extraction'];
    expect(await call('POST', `/api/v1/assets/${id}/delete`, { keys })).toMatchObject({ status: 200, body: { id, keys, status: 'OK' } });
    const data = (await call('GET', `/api/v1/assets/${id}/data`)).body;
    expect(data.status).toBe('OK');
    expect(Object.keys(data.conversions)).not.toContain(conversion);
    expect(Object.keys(data.addons_info)).not.toContain('auto_tagging');
    expect(await call('GET', `/api/v1/assets/${id}/addons/auto_tagging`)).toMatchObject({
      status: 404,
      body: { error: { code: 'ADDON_RESULT_NOT_FOUND', message: 'The auto_tagging addon has not run on this asset' } },
    });
    const deleted = await waitFor(() => events.seen.find((e) => e.asset_id === id && e.type === 'file-deleted'), { description: 'file-deleted' });
    expect(deleted.subject).toMatch(/^assets\.events\.\d+\.file-deleted$/);
    expect(FILE_DELETED.schema.safeParse(deleted.envelope).success).toBe(true);
    expect((deleted.envelope as any).data).toEqual({ id, event: 'file-deleted', keys, status: 'OK', message: `Deleted: ${conversion}, auto_tagging` });
    // Search forgets the tag with it.
    await waitFor(async () => ((await foundByTag()) ? undefined : true), { description: 'the tag out of search' });
  });

  it('removes the background of a picture into the conversion background_removal, a PNG with alpha to download', async () => {
    const figure = await sharp(
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480"><rect width="640" height="480" fill="#e4ecf2"/>' +
          '<circle cx="320" cy="170" r="70" fill="#e8b090"/><rect x="230" y="240" width="180" height="240" rx="40" fill="#2a6"/></svg>',
      ),
    )
      .jpeg()
      .toBuffer();
    const id = await upload(figure, 'figure.jpg');
    await settled(id);
    const run = await call('POST', `/api/v1/assets/${id}/addons/background_removal`);
    expect(run).toMatchObject({ status: 202, body: { job_id: expect.any(Number), status: 'QUEUED' } });
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 90_000,
      description: 'the background removal job',
    });
    const result = (await call('GET', `/api/v1/assets/${id}/addons/background_removal`)).body;
    expect(result).toEqual({ key: 'background_removal', width: 640, height: 480, size: expect.any(Number) });
    const data = (await call('GET', `/api/v1/assets/${id}/data`)).body;
    expect(data.addons_info.background_removal).toEqual({ available: true });
    const res = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/background_removal/download`, { headers: { authorization: `Bearer ${e2e.jwt}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    const png = Buffer.from(await res.arrayBuffer());
    expect(png.length).toBe(result.size);
    const { data: pixels, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    expect(pixels[3]).toBeLessThan(16); // the top left corner is background
    expect(pixels[(300 * 640 + 320) * 4 + 3]).toBeGreaterThan(240); // the figure's body is kept
  });

  it("recognises the same person across the group's pictures, and a different person as another", async () => {
    const astronaut = readFileSync(path.join(__dirname, '..', 'fixtures', 'images', 'astronaut.jpg'));
    const ids = [
      await upload(astronaut, 'astronaut.jpg'),
      await upload(await sharp(astronaut).flop().resize(300).jpeg().toBuffer(), 'astronaut-small.jpg'),
      await upload(readFileSync(path.join(__dirname, '..', 'fixtures', 'images', 'camera.jpg')), 'camera.jpg'),
    ];
    const people: string[] = [];
    for (const id of ids) {
      await settled(id);
      const run = await call('POST', `/api/v1/assets/${id}/addons/face_recognition`);
      expect(run.status).toBe(202);
      await waitFor(async () => (await call('GET', `/api/v1/jobs/${run.body.job_id}`)).body.status === 'COMPLETED', {
        timeoutMs: 60_000,
        description: 'the face job',
      });
      const { faces } = (await call('GET', `/api/v1/assets/${id}/addons/face_recognition`)).body;
      expect(faces).toHaveLength(1);
      expect(faces[0]).toEqual({
        box: { x: expect.any(Number), y: expect.any(Number), width: expect.any(Number), height: expect.any(Number) },
        confidence: expect.any(Number),
        person_id: expect.any(String),
      });
      people.push(faces[0].person_id);
    }
    expect(people[1]).toBe(people[0]);
    expect(people[2]).not.toBe(people[0]);
    // Tags of a picture with a face say so (known from face_recognition).
    const tag = await call('POST', `/api/v1/assets/${ids[0]}/addons/auto_tagging`);
    await waitFor(async () => (await call('GET', `/api/v1/jobs/${tag.body.job_id}`)).body.status === 'COMPLETED', {
      timeoutMs: 60_000,
      description: 'the tagging job',
    });
    expect((await call('GET', `/api/v1/assets/${ids[0]}/addons/auto_tagging`)).body.labels).toContainEqual({ label: 'has-faces', confidence: 1 });
  });

  // Last in this file: these restart the addon service with settings that break text_extraction.
  describe('automatic addons that fail or cannot run (CONTRACT §16)', () => {
    const page = () =>
      sharp(
        Buffer.from(
          '<svg xmlns="http://www.w3.org/2000/svg" width="900" height="160"><rect width="100%" height="100%" fill="white"/>' +
            '<text x="30" y="100" font-family="DejaVu Sans, sans-serif" font-size="48" fill="black">Nothing to read here</text></svg>',
        ),
      )
        .png()
        .toBuffer();
    let events: Awaited<ReturnType<typeof watchAssetEvents>>;
    let probe: string;
    /** The addon service again with `env`, once metadata answers a run of text_extraction with `status`. */
    const addonWith = async (env: Record<string, string>, status: number) => {
      await e2e.suite.services.addon?.stop();
      await e2e.suite.restart('addon', env);
      await waitFor(async () => (await call('POST', `/api/v1/assets/${probe}/addons/text_extraction`)).status === status, {
        timeoutMs: 30_000,
        description: `a text_extraction run answered ${status}`,
      });
    };
    const processedOf = (id: string) => events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed');

    beforeAll(async () => {
      events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
      e2e.beforeStop(() => events.close());
      probe = await upload(await page(), 'probe.png');
      await settled(probe);
      expect((await call('PATCH', '/api/v1/settings', { addons: { auto: { image: ['text_extraction'] } } })).status).toBe(200);
    });

    it('skips an automatic addon whose model is not available: the asset is OK with available: false, one file-processed', async () => {
      // tesseract has no such language: the addon says text_extraction failed to load, and metadata asks it.
      await addonWith({ OCR_LANGUAGE: 'klingon' }, 503);
      const id = await upload(await page(), 'unreadable.png');
      const data = await settled(id);
      expect(data.status).toBe('OK');
      expect(data.addons_info.text_extraction).toEqual({ available: false });
      expect(data.errors ?? {}).not.toHaveProperty('text_extraction');
      expect(((await call('GET', '/api/v1/jobs?type=addon&page_size=100')).body.items as any[]).some((j) => j.asset_ids.includes(id))).toBe(false);
      expect((await call('GET', `/api/v1/assets/${id}/addons/text_extraction`)).status).toBe(404);
      const processed = await waitFor(() => processedOf(id)[0], { description: 'file-processed' });
      expect((processed.envelope as any).data).toMatchObject({ status: 'OK', addons_info: { text_extraction: { available: false } } });
      expect(processedOf(id)).toHaveLength(1);
    });

    it('makes the asset ERROR when an automatic addon fails, with the addon and its reason in errors, one file-processed', async () => {
      // Every OCR run is stopped at once: the model loads, the run fails.
      await addonWith({ OCR_LANGUAGE: 'eng', OCR_TIMEOUT_MS: '1' }, 202);
      const id = await upload(await page(), 'failing.png');
      const data = await settled(id, 120_000);
      expect(data.status).toBe('ERROR');
      expect(data.errors).toMatchObject({ text_extraction: expect.stringContaining('tesseract stopped after 1 ms') });
      expect(Object.keys(data.conversions).length).toBeGreaterThan(0);
      const job = ((await call('GET', '/api/v1/jobs?type=addon&page_size=100')).body.items as any[]).find((j) => j.asset_ids.includes(id));
      expect(job).toMatchObject({ status: 'ERROR' });
      const processed = await waitFor(() => processedOf(id)[0], { description: 'file-processed' });
      expect((processed.envelope as any).data).toMatchObject({ status: 'ERROR', errors: { text_extraction: expect.any(String) } });
      expect(processedOf(id)).toHaveLength(1);
    });
  });
});
