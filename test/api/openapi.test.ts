import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { api } from '../helpers/api';

const API_ROOT = join(process.cwd(), 'app/api/v1');

/** Every route file under app/api/v1 as an OpenAPI path with the methods it exports. */
function routeFiles(dir = API_ROOT): { path: string; methods: string[] }[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) return routeFiles(full);
    if (entry !== 'route.ts') return [];
    const rel = relative(API_ROOT, dir);
    if (rel.includes('[...')) return [];
    const path =
      '/' +
      rel
        .split('/')
        .map((s) => s.replace(/^\[(.+)\]$/, '{$1}'))
        .join('/');
    const source = readFileSync(full, 'utf8');
    // Methods re-exported from a handler that only answers 405 (e.g. immutable versions) are not operations.
    const refused = source.includes("'method_not_allowed'");
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (m) => new RegExp(`export const ${m}\\b`).test(source) || (!refused && new RegExp(`as ${m}\\b`).test(source)),
    );
    return [{ path, methods }];
  });
}

describe('OpenAPI document', () => {
  it('is served without credentials as OpenAPI 3.1', async () => {
    const doc = await api('GET', '/openapi.json', { token: null });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
  });

  it('documents every route file and every method it exports', async () => {
    const doc = (await api('GET', '/openapi.json')).body;
    const documented = Object.keys(doc.paths);
    const missing: string[] = [];
    for (const file of routeFiles()) {
      // Path parameter names may differ between folders and docs; compare shapes.
      const shape = file.path.replace(/\{[^}]+\}/g, '{}');
      const entry = documented.find((p) => p.replace(/\{[^}]+\}/g, '{}') === shape);
      if (!entry) {
        missing.push(file.path);
        continue;
      }
      for (const method of file.methods) if (!doc.paths[entry][method.toLowerCase()]) missing.push(`${method} ${file.path}`);
    }
    expect(missing).toEqual([]);
  });

  it('says of every path parameter whether it takes an id, a name or either', async () => {
    const doc = (await api('GET', '/openapi.json')).body;
    const undescribed: string[] = [];
    for (const [path, item] of Object.entries<Record<string, { parameters?: { name: string; in: string; description?: string }[] }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const parameter of op.parameters ?? [])
          if (parameter.in === 'path' && !parameter.description) undescribed.push(`${method} ${path} {${parameter.name}}`);
      }
    }
    expect(undescribed).toEqual([]);
    expect(doc.paths['/tenants/{tenant}/workflows/{id}/start'].post.parameters.find((p: { name: string }) => p.name === 'id').description).toBe(
      'Workflow id or name',
    );
  });
});
