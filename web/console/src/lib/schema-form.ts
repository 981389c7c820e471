/**
 * The custom data form of an asset page, built from the asset schema and its `service_properties.<path>.ui`
 * hints (CONTRACT §5; the hints are the console's own vocabulary, documented in README.md "Web console"):
 *
 *   ui: { label?, widget?, help?, placeholder?, order?, options? }
 *   widget: text | textarea | number | integer | checkbox | select | date | tags | json | readonly | hidden
 *
 * Without hints the widget follows the JSON Schema type (string → text, `enum` → select, `format: date` → date,
 * number → number, integer → integer, boolean → checkbox, array of strings → tags, anything else → json). Keys the
 * data holds but the schema does not describe are shown too, by the type of their value. Pure: unit-tested.
 */

export type Widget = 'text' | 'textarea' | 'number' | 'integer' | 'checkbox' | 'select' | 'date' | 'tags' | 'json' | 'readonly' | 'hidden';

const WIDGETS: readonly Widget[] = ['text', 'textarea', 'number', 'integer', 'checkbox', 'select', 'date', 'tags', 'json', 'readonly', 'hidden'];

export interface FieldSpec {
  name: string;
  label: string;
  widget: Widget;
  help?: string;
  placeholder?: string;
  /** For `select`: the allowed values, as the data holds them. */
  options?: (string | number)[];
  required: boolean;
  order: number;
}

export type FormValues = Record<string, string | boolean>;

export interface ReadResult {
  data: Record<string, unknown>;
  /** Field name → what is wrong with its value; empty when the data can be sent. */
  errors: Record<string, string>;
}

type JsonSchemaProperty = { type?: unknown; enum?: unknown; format?: unknown; items?: unknown; title?: unknown; description?: unknown };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const reserved = (name: string): boolean => name.startsWith('_service');

function humanize(name: string): string {
  const words = name.replace(/[_.-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function widgetForSchema(p: JsonSchemaProperty): Widget {
  const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
  if (Array.isArray(p.enum) && p.enum.every((v) => typeof v === 'string' || typeof v === 'number')) return 'select';
  switch (type) {
    case 'string':
      return p.format === 'date' ? 'date' : 'text';
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'checkbox';
    case 'array':
      return isRecord(p.items) && p.items.type === 'string' ? 'tags' : 'json';
    default:
      return 'json';
  }
}

function widgetForValue(value: unknown): Widget {
  if (typeof value === 'string') return value.length > 120 || value.includes('\n') ? 'textarea' : 'text';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'checkbox';
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return 'tags';
  return 'json';
}

/** The form's fields, in `order` (then schema order, then the data's other keys). */
export function fieldsFor(schema: unknown, serviceProperties: unknown, data: Record<string, unknown>): FieldSpec[] {
  const props = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(isRecord(schema) && Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  const hintsOf = (name: string): Record<string, unknown> => {
    const sp = isRecord(serviceProperties) ? serviceProperties[name] : undefined;
    return isRecord(sp) && isRecord(sp.ui) ? sp.ui : {};
  };
  const fields: FieldSpec[] = [];
  const names = [...Object.keys(props), ...Object.keys(data).filter((k) => !(k in props))].filter((n) => !reserved(n));
  names.forEach((name, index) => {
    const p: JsonSchemaProperty = isRecord(props[name]) ? (props[name] as JsonSchemaProperty) : {};
    const ui = hintsOf(name);
    const hinted = typeof ui.widget === 'string' && (WIDGETS as readonly string[]).includes(ui.widget) ? (ui.widget as Widget) : undefined;
    const widget = hinted ?? (name in props ? widgetForSchema(p) : widgetForValue(data[name]));
    const options = Array.isArray(ui.options) ? ui.options : Array.isArray(p.enum) ? p.enum : undefined;
    const field: FieldSpec = {
      name,
      label: typeof ui.label === 'string' ? ui.label : typeof p.title === 'string' ? p.title : humanize(name),
      widget: widget === 'select' && !options ? 'text' : widget,
      required: required.has(name),
      order: typeof ui.order === 'number' ? ui.order : 1000 + index,
    };
    const help = typeof ui.help === 'string' ? ui.help : typeof p.description === 'string' ? p.description : undefined;
    if (help) field.help = help;
    if (typeof ui.placeholder === 'string') field.placeholder = ui.placeholder;
    if (field.widget === 'select' && options) field.options = options.filter((o): o is string | number => typeof o === 'string' || typeof o === 'number');
    fields.push(field);
  });
  return fields.sort((a, b) => a.order - b.order);
}

/** The form's starting values from the asset's data. */
export function initialValues(fields: FieldSpec[], data: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const f of fields) {
    const v = data[f.name];
    switch (f.widget) {
      case 'checkbox':
        values[f.name] = v === true;
        break;
      case 'tags':
        values[f.name] = Array.isArray(v) ? v.map(String).join(', ') : v === undefined ? '' : String(v);
        break;
      case 'json':
        values[f.name] = v === undefined ? '' : JSON.stringify(v, null, 2);
        break;
      default:
        values[f.name] = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    }
  }
  return values;
}

/**
 * The data to send (Update Data, `REPLACE`): the asset's data with the form's values applied. An emptied field
 * removes its key; read-only and hidden fields keep their value; a value that cannot be read is an error.
 */
export function readData(fields: FieldSpec[], values: FormValues, original: Record<string, unknown>): ReadResult {
  const data: Record<string, unknown> = { ...original };
  const errors: Record<string, string> = {};
  for (const f of fields) {
    if (f.widget === 'readonly' || f.widget === 'hidden') continue;
    const raw = values[f.name];
    if (f.widget === 'checkbox') {
      data[f.name] = raw === true;
      continue;
    }
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (text === '') {
      if (f.required) errors[f.name] = 'Required';
      delete data[f.name];
      continue;
    }
    switch (f.widget) {
      case 'number':
      case 'integer': {
        const n = Number(text);
        if (!Number.isFinite(n)) errors[f.name] = 'Not a number';
        else if (f.widget === 'integer' && !Number.isInteger(n)) errors[f.name] = 'Must be a whole number';
        else data[f.name] = n;
        break;
      }
      case 'tags':
        data[f.name] = text
          .split(',')
          .map((t) => t.trim())
          .filter((t) => t.length > 0);
        break;
      case 'json':
        try {
          data[f.name] = JSON.parse(text) as unknown;
        } catch {
          errors[f.name] = 'Not valid JSON';
        }
        break;
      case 'select': {
        const match = f.options?.find((o) => String(o) === text);
        if (match === undefined) errors[f.name] = 'Not one of the choices';
        else data[f.name] = match;
        break;
      }
      default:
        data[f.name] = typeof raw === 'string' && f.widget === 'textarea' ? raw : text;
    }
  }
  return { data, errors };
}

/** Server validation details (`{path: "data.title", message}`) as field errors; the rest as general messages. */
export function errorsFromDetails(details: unknown, fields: FieldSpec[]): { byField: Record<string, string>; other: string[] } {
  const byField: Record<string, string> = {};
  const other: string[] = [];
  if (!Array.isArray(details)) return { byField, other };
  const names = new Set(fields.map((f) => f.name));
  for (const d of details) {
    if (!isRecord(d) || typeof d.message !== 'string') continue;
    const path = typeof d.path === 'string' ? d.path.replace(/^data\.?/, '') : '';
    const head = path.split(/[.[]/)[0] ?? '';
    if (head && names.has(head)) byField[head] = byField[head] ? `${byField[head]}; ${d.message}` : d.message;
    else other.push(path ? `${path}: ${d.message}` : d.message);
  }
  return { byField, other };
}
