import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { parse } from 'yaml';

/** docs/openapi.yaml at the repository root: the one source; the JSON form is derived from it. */
export const OPENAPI_YAML_PATH = path.resolve(__dirname, '../../../../docs/openapi.yaml');

export interface OpenApiDocument {
  yaml: string;
  json: string;
}

/**
 * Reads and converts the document once. A missing or unparsable file fails the start-up: the tests parse
 * the same file, so this only happens when a deployment forgot to ship docs/.
 */
export function loadOpenApiDocument(file: string = OPENAPI_YAML_PATH): OpenApiDocument {
  const yaml = readFileSync(file, 'utf8');
  const doc: unknown = parse(yaml);
  if (typeof doc !== 'object' || doc === null || !('openapi' in doc)) {
    throw new Error(`${file} is not an OpenAPI document`);
  }
  return { yaml, json: JSON.stringify(doc) };
}

/**
 * `GET /api/v1/openapi.json|yaml`: public, answered by the gateway itself before the route table (nothing
 * upstream owns them), so no credentials and no per-caller budget are involved.
 */
export function openApiRoutes(doc: OpenApiDocument = loadOpenApiDocument()): Router {
  const router = Router();
  // Documentation tools on other origins (Swagger UI, editors) fetch it; it holds nothing private.
  const common = { 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'public, max-age=300' };
  router.get('/api/v1/openapi.json', (_req, res) => {
    res.set(common).type('application/json').send(doc.json);
  });
  router.get('/api/v1/openapi.yaml', (_req, res) => {
    res.set(common).type('application/yaml').send(doc.yaml);
  });
  return router;
}
