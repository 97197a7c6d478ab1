import type { TestProject } from 'vitest/node';
import { openApiDocument } from '../../server/http/openapi';
import { clearObserved, readObserved } from '../helpers/observed-statuses';

// The OpenAPI document must list every status a route answers. The API tests' helper records what it sees; when the
// run is over this fails it on any (route, method, status) the document does not list. Calls to paths or methods the
// document has no operation for (tests of unknown routes, 405s) are not operations, so they are not checked here.
export default function setup(project: TestProject) {
  const provider = project.name === 'postgres' ? 'postgres' : 'sqlite';
  clearObserved(provider);
  return () => {
    const undocumented = undocumentedStatuses(provider);
    if (undocumented.length > 0) {
      throw new Error(`[${project.name}] statuses the API answered that GET /openapi.json does not list:\n  ${undocumented.join('\n  ')}`);
    }
  };
}

type Operation = { responses?: Record<string, unknown> };

export function undocumentedStatuses(provider: string): string[] {
  const paths = (openApiDocument() as { paths: Record<string, Record<string, Operation>> }).paths;
  const templates = Object.keys(paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  const missing = new Set<string>();
  for (const { method, path, status } of readObserved(provider)) {
    // The most specific template: literal segments beat parameters (e.g. /tenants/{tenant}/keys before /tenants/{tenant}/{x}).
    const matches = templates.filter((t) => t.pattern.test(path)).sort((a, b) => paramCount(a.template) - paramCount(b.template));
    const operation = matches.map((t) => ({ template: t.template, op: paths[t.template][method.toLowerCase()] })).find((m) => m.op);
    if (!operation) continue;
    if (!operation.op.responses?.[String(status)]) missing.add(`${method} ${operation.template} → ${status}`);
  }
  return [...missing].sort();
}

const paramCount = (template: string) => (template.match(/\{/g) ?? []).length;
