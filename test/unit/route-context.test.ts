// Every API route gets its caller from the route wrappers (server/http/request-context.ts), so none can forget to
// authenticate or check the tenant in its own way. Only the routes anyone may call use openRoute or the bare route().
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const API = join(import.meta.dirname, '../../app/api/v1');
const DIRECT_ROUTES = join(import.meta.dirname, '../../server/http');

/** Routes without credentials: sign-in and sign-out, the OpenAPI document, unknown paths, the immutable versions' refusals. */
const OPEN = new Set(['session/route.ts', 'openapi.json/route.ts', '[[...unknown]]/route.ts', 'tenants/[tenant]/workflows/[id]/versions/[version]/route.ts']);

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return routeFiles(path);
    return entry.name === 'route.ts' ? [path] : [];
  });
}

const WRAPPED = /\b(callerRoute|adminRoute|tenantRoute|adminTenantRoute)\b/;
const SELF_AUTH = /\b(authenticate|requireAdmin|findTenant|assertAdmin)\(/;

describe('API routes take their caller from the request context', () => {
  const files = routeFiles(API);

  it('finds the route files', () => {
    expect(files.length).toBeGreaterThan(50);
  });

  it.each(files.map((file) => [relative(API, file), file]))('%s authenticates through a route wrapper', (name, file) => {
    const source = readFileSync(file, 'utf8');
    expect(source, `${name} authenticates by itself`).not.toMatch(SELF_AUTH);
    if (OPEN.has(name)) return;
    const bare = source.match(/export const \w+ = route[<(]/g) ?? [];
    expect(bare, `${name} exports a handler built with the bare route(), which skips authentication`).toEqual([]);
    const delegated = /export const \w+ = (getCounts|postEvents|postCrowd|putCrowd|postProfileImport);/.test(source);
    expect(WRAPPED.test(source) || delegated, `${name} uses none of the route wrappers`).toBe(true);
  });

  it('the routes our HTTP server answers directly use the wrappers too', () => {
    for (const name of ['counts-route.ts', 'events-route.ts', 'crowd-upload-route.ts', 'profile-import-route.ts']) {
      const source = readFileSync(join(DIRECT_ROUTES, name), 'utf8');
      expect(source, name).toMatch(WRAPPED);
      expect(source, name).not.toMatch(SELF_AUTH);
    }
  });
});
