import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { api } from '../helpers/api';

// The served document as integrators use it: the statuses and schemas they code against, and a typed client generated
// from it by a maintained generator (openapi-typescript) that type-checks against calls written the way the README shows.
// (Every status the API tests observe is checked against the document after the run: test/setup/openapi-statuses.ts.)
type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: { name: string; in: string }[] }>> };

async function served(): Promise<Doc> {
  return (await api('GET', '/openapi.json', { token: null })).body as Doc;
}

describe('OpenAPI document', () => {
  it('lists the statuses integrators met undocumented, and the counts validation enforces', async () => {
    const doc = await served();
    expect(Object.keys(doc.paths['/tenants/{tenant}/workflows/{id}/start'].post.responses)).toContain('422');
    expect(Object.keys(doc.paths['/tenants/{tenant}/crowds/{name}'].put.responses)).toEqual(expect.arrayContaining(['200', '201']));
    const events = doc.paths['/events'].post;
    expect(Object.keys(events.responses)).toEqual(expect.arrayContaining(['202', '400', '401', '403', '413', '415', '422', '429', '503']));
    expect(events.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }));
    const text = JSON.stringify(doc);
    // one branch is enough since one-branch steps are allowed (issue 15): the document says so
    expect(text).toMatch(/"branches":\{"type":"array".*?"minItems":1,"description":"Tried in order on each event/);
    expect(text).toContain('"timeout":{');
  });

  it('generates a typed client with openapi-typescript that type-checks against README-style calls', { timeout: 120_000 }, async () => {
    const doc = await served();
    const types = astToString(await openapiTS(doc as never));
    const dir = join(process.cwd(), 'test-results/openapi-client');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'api.d.ts'), types);
    const usage = `import type { paths } from './api';
type EventsBody = paths['/events']['post']['requestBody']['content']['application/json'];
type Accepted = paths['/events']['post']['responses']['202']['content']['application/json'];
const body: EventsBody = { events: [{ id: 'order-1001-paid', user: 7, type: 'purchase', data: { amount: 120 } }] };
const answer: Accepted = { accepted: 1, duplicates: 0 };
type Start = paths['/tenants/{tenant}/workflows/{id}/start']['post'];
const start: Start['requestBody']['content']['application/json'] = { crowd: 'vip' };
// @ts-expect-error user ids are numbers
const wrong: EventsBody = { events: [{ user: '7', type: 'purchase' }] };
export { answer, body, start, wrong };
`;
    writeFileSync(join(dir, 'usage.ts'), usage);
    const program = ts.createProgram([join(dir, 'usage.ts')], {
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      target: ts.ScriptTarget.ES2022,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      module: ts.ModuleKind.ESNext,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(problems).toEqual([]);
    expect(types).toContain('"Idempotency-Key"?: string');
  });
});
