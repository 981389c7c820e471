import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { parse } from 'yaml';
import { ASYNCAPI_PATH, renderAsyncApi } from '../src/asyncapi';
import { ASSET_EVENT_TYPES } from '../src';
import { fileSavedEvent } from './fixtures';

const text = readFileSync(ASYNCAPI_PATH, 'utf8');

describe('docs/asyncapi.yaml (AsyncAPI 3 of ASSET_EVENTS)', () => {
  it("is what the events' zod schemas make (regenerate: pnpm --filter @dam/events asyncapi)", () => {
    expect(text).toBe(renderAsyncApi());
  });

  it('is a valid AsyncAPI 3 document: no error from @asyncapi/parser', async () => {
    const { document, diagnostics } = await new Parser().parse(text);
    const errors = diagnostics.filter((d) => d.severity === 0);
    expect(errors.map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`)).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    // One channel and one receive operation per public event, on its subject.
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.address())
        .sort(),
    ).toEqual(ASSET_EVENT_TYPES.map((t) => `assets.events.{group_id}.${t}`).sort());
    expect(
      document
        ?.operations()
        .all()
        .every((o) => o.action() === 'receive'),
    ).toBe(true);
    // The parser does reject a broken document (this test can fail).
    const broken = await new Parser().parse(text.replace('asyncapi: 3.0.0', 'asyncapi: 3.0.0\nnonsense: true'));
    expect(broken.diagnostics.some((d) => d.severity === 0)).toBe(true);
  });

  it('describes the envelope every event carries, with the asset data as published', () => {
    const doc = parse(text) as { components: { schemas: Record<string, { required?: string[]; properties: Record<string, { const?: string }> }> } };
    const saved = doc.components.schemas.FileSavedEvent;
    expect(saved?.required).toEqual(expect.arrayContaining(['id', 'type', 'time', 'group_id', 'asset_id', 'version', 'data']));
    expect(saved?.properties.type?.const).toBe('file-saved');
    expect(Object.keys(fileSavedEvent())).toEqual(expect.arrayContaining(saved?.required ?? []));
  });
});
