import { errorsFromDetails, fieldsFor, initialValues, readData } from '../src/lib/schema-form';

const schema = {
  type: 'object',
  required: ['title'],
  properties: {
    title: { type: 'string', title: 'Title' },
    rating: { type: 'integer' },
    price: { type: 'number' },
    approved: { type: 'boolean' },
    license: { type: 'string', enum: ['CC-BY', 'CC0'] },
    shot_on: { type: 'string', format: 'date' },
    keywords: { type: 'array', items: { type: 'string' } },
    location: { type: 'object' },
    internal: { type: 'string' },
  },
};
const serviceProperties = {
  title: { searchable: true, ui: { order: 1, placeholder: 'A short title' } },
  rating: { ui: { label: 'Stars', help: '1 to 5', order: 2 } },
  internal: { ui: { widget: 'hidden' } },
  price: { ui: { widget: 'readonly' } },
  description: { ui: { widget: 'textarea', order: 3 } },
};

describe('fieldsFor', () => {
  it('takes the widget from the ui hint, else from the JSON Schema type; orders by ui.order', () => {
    const fields = fieldsFor(schema, serviceProperties, { description: 'long text', extra: 3, _service_x: 1 });
    const byName = Object.fromEntries(fields.map((f) => [f.name, f]));
    expect(fields.slice(0, 2).map((f) => f.name)).toEqual(['title', 'rating']);
    expect(byName.title).toMatchObject({ widget: 'text', label: 'Title', required: true, placeholder: 'A short title' });
    expect(byName.rating).toMatchObject({ widget: 'integer', label: 'Stars', help: '1 to 5', required: false });
    expect(byName.approved?.widget).toBe('checkbox');
    expect(byName.license).toMatchObject({ widget: 'select', options: ['CC-BY', 'CC0'] });
    expect(byName.shot_on?.widget).toBe('date');
    expect(byName.keywords?.widget).toBe('tags');
    expect(byName.location?.widget).toBe('json');
    expect(byName.internal?.widget).toBe('hidden');
    expect(byName.price?.widget).toBe('readonly');
    // Keys the data holds beyond the schema are shown by their value's type; reserved keys never.
    expect(byName.description?.widget).toBe('textarea');
    expect(byName.extra).toMatchObject({ widget: 'number', label: 'Extra' });
    expect(byName._service_x).toBeUndefined();
  });

  it('falls back to a text field for a select without choices, and ignores unknown widgets', () => {
    const fields = fieldsFor(
      { properties: { a: { type: 'string' }, b: { type: 'integer' } } },
      { a: { ui: { widget: 'select' } }, b: { ui: { widget: 'spinner' } } },
      {},
    );
    expect(fields.map((f) => f.widget)).toEqual(['text', 'integer']);
  });

  it('builds a form from the data alone when there is no schema', () => {
    const fields = fieldsFor(undefined, undefined, { title: 'x', tags: ['a', 'b'], on: true, nested: { a: 1 } });
    expect(fields.map((f) => [f.name, f.widget])).toEqual([
      ['title', 'text'],
      ['tags', 'tags'],
      ['on', 'checkbox'],
      ['nested', 'json'],
    ]);
  });
});

describe('initialValues and readData', () => {
  const data = { title: 'Sunset', rating: 4, approved: true, keywords: ['sea', 'sky'], location: { lat: 1 }, internal: 'keep', price: 9.5, license: 'CC0' };
  const fields = fieldsFor(schema, serviceProperties, data);

  it('round-trips unchanged data', () => {
    const values = initialValues(fields, data);
    expect(values).toMatchObject({ title: 'Sunset', rating: '4', approved: true, keywords: 'sea, sky', license: 'CC0' });
    expect(readData(fields, values, data)).toEqual({ data, errors: {} });
  });

  it('converts the values, removes emptied fields and keeps read-only and hidden ones', () => {
    const values = {
      ...initialValues(fields, data),
      rating: '5',
      keywords: ' a , b,, c ',
      location: '{"lat": 2}',
      approved: false,
      license: '',
      price: '1000',
    };
    const { data: out, errors } = readData(fields, values, data);
    expect(errors).toEqual({});
    expect(out).toEqual({ title: 'Sunset', rating: 5, approved: false, keywords: ['a', 'b', 'c'], location: { lat: 2 }, internal: 'keep', price: 9.5 });
  });

  it('reports what cannot be read, per field', () => {
    const values = { ...initialValues(fields, data), title: '  ', rating: '4.5', location: '{oops', license: 'GPL' };
    const { errors } = readData(fields, values, data);
    expect(errors).toEqual({ title: 'Required', rating: 'Must be a whole number', location: 'Not valid JSON', license: 'Not one of the choices' });
  });
});

describe('errorsFromDetails', () => {
  it('puts the server validation details next to their fields', () => {
    const fields = fieldsFor(schema, serviceProperties, {});
    const mapped = errorsFromDetails(
      [
        { path: 'data.rating', message: 'must be <= 5' },
        { path: 'data.keywords[0]', message: 'must be string' },
        { path: 'data', message: 'must NOT have additional properties' },
        'garbage',
      ],
      fields,
    );
    expect(mapped.byField).toEqual({ rating: 'must be <= 5', keywords: 'must be string' });
    expect(mapped.other).toEqual(['must NOT have additional properties']);
  });
});
