import { beforeAll, describe, expect, inject, it } from 'vitest';
import { api, createTenant, uniqueName } from '../helpers/api';
import { check, numberMutations, raw, type Sent, stringMutations, wrongValues } from './robustness-kit';

// Hostile input on every route of the OpenAPI document, over real HTTP: bad credentials, another tenant's key,
// odd path parameters, malformed and wrongly typed bodies, hostile query values. Every answer must be a 4xx with
// {error: {code, message}} whose message names what is wrong; never a 5xx, never a hang. Each family collects
// every failing request first, so one run lists them all.

type Operation = { method: string; path: string; pathParams: string[]; query: { name: string; numeric: boolean; required: boolean }[]; bodyTypes: string[] };

/** Hundreds of requests per test: on a loaded 2-core machine that takes longer than vitest's default timeout. */
const HEAVY_TIMEOUT_MS = 300_000;

const PUBLIC = new Set(['POST /session', 'DELETE /session', 'GET /openapi.json']);
/** Calls only the admin may make: another tenant's key gets 403 there, not 404. */
const ADMIN_ONLY = new Set(['POST /tenants', 'DELETE /tenants/{tenant}', 'PUT /tenants/{tenant}/limits', 'GET /audit']);
/** Path slots that name a resource the call creates: a hostile value that is a valid name may be created. */
const CREATES_BY_NAME = new Set(['POST /tenants/{tenant}/crowds/{name}:name', 'PUT /tenants/{tenant}/crowds/{name}:name', 'PUT /consumers/{name}:name']);

/** What an error message must mention for each path parameter (its kind of thing or the value itself). */
const PARAM_WORDS: Record<string, RegExp> = {
  tenant: /tenant/i,
  keyId: /key/i,
  name: /crowd|consumer|name/i,
  user: /user/i,
  id: /workflow|procedure|dead letter|\bid\b/i,
  version: /version/i,
  iid: /instance|iid/i,
  step: /step/i,
};

const HOSTILE_SEGMENTS = [
  '%00',
  'a%00b',
  '..%2F..%2Fadmin',
  '...',
  '-1',
  '1.5',
  '99999999999999999999999',
  '4294967296',
  'no-such-thing',
  '%F0%9F%92%A9',
  '%25',
  'a%2Fb',
  '%20',
  '%27%3B%20DROP%20TABLE%20%22Tenant%22%3B--',
  'x'.repeat(3000),
];

/** A bare `..` segment is resolved by URL normalization (RFC 3986) before any route: a redirect or another route's
 * answer is right there, as long as it is not a 5xx. */
const DOT_SEGMENTS = ['..', '%2E%2E'];

/** Fields whose type is a union, so the "wrong" value tried for them is valid: a consumer starts at 'tail', 'head' or a cursor number. */
const UNION_TYPED_FIELDS = new Set(['PUT /consumers/{name}:start']);

const HOSTILE_NUMBERS = ['-1', '1.5', 'abc', '1e400', 'NaN', '%00'];
const HOSTILE_STRINGS = ['%00', 'x'.repeat(3000), '%F0%9F%92%A9'];

type Fixture = {
  a: Awaited<ReturnType<typeof createTenant>>;
  b: Awaited<ReturnType<typeof createTenant>>;
  revokedKey: string;
  values: Record<string, string>;
};

let fixture: Fixture;
let operations: Operation[];

const workflowDefinition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'user == 1', next: 'done' },
        { condition: 'true', next: 'done' },
      ],
    },
    { name: 'done', kind: 'direct' },
  ],
};

/** A body each operation accepts; hostile variants are made from it. Text bodies are crowd uploads. */
function validBody(op: Operation): { contentType: string; body: unknown } {
  const key = `${op.method} ${op.path}`;
  const bodies: Record<string, unknown> = {
    'POST /tenants': { name: uniqueName('t'), partitions: 2 },
    'POST /tenants/{tenant}/keys': { name: 'robust' },
    'PUT /tenants/{tenant}/limits': { journalRetentionHours: 168 },
    'POST /session': { token: 'not-the-admin-token' },
    'POST /tenants/{tenant}/combine-crowds': { name: 'combined', op: 'union', crowds: ['base'] },
    'POST /tenants/{tenant}/profiles': [{ user: 7, attributes: { plan: 'gold' } }],
    'POST /tenants/{tenant}/audience': { condition: 'profile.plan == "gold"' },
    'POST /tenants/{tenant}/workflows/{id}/explain': { definition: workflowDefinition },
    'POST /tenants/{tenant}/workflows/{id}/preview-path': { user: 7, events: [{ type: 'purchase', data: { plan: 'gold' } }] },
    'POST /tenants/{tenant}/workflows': { name: uniqueName('wf'), definition: workflowDefinition },
    'PUT /tenants/{tenant}/workflows/{id}': { name: uniqueName('renamed') },
    'POST /tenants/{tenant}/workflows/{id}/start': { crowd: 'base' },
    'POST /tenants/{tenant}/instances/{iid}/crowd': { crowd: 'base' },
    'POST /tenants/{tenant}/instances/{iid}/workflow': { version: 1 },
    'POST /tenants/{tenant}/instances/{iid}/steps/{step}/crowd': { name: uniqueName('saved') },
    'POST /events': { tenant: fixture.a.name, events: [{ user: 1, type: 'robust' }] },
    'PUT /consumers/{name}': { start: 'tail' },
    'POST /consumers/{name}/commit': { cursor: 0 },
    'POST /tenants/{tenant}/webhooks': { name: uniqueName('hook'), url: 'http://127.0.0.1:9/hook' },
    'PATCH /tenants/{tenant}/webhooks/{name}': { batchSize: 5 },
    'POST /tenants/{tenant}/frequency-caps': { name: uniqueName('cap'), maxDeliveries: 2, window: '1d' },
    'PATCH /tenants/{tenant}/frequency-caps/{name}': { maxDeliveries: 3 },
    'PUT /tenants/{tenant}/quiet-hours': { start: '21:00', end: '08:00' },
    'POST /tenants/{tenant}/instances/{iid}/experiments/{step}/winner': { path: 'done' },
  };
  if (op.bodyTypes.includes('text/plain')) return { contentType: 'text/plain', body: '1\n2\n3\n' };
  if (op.bodyTypes.includes('application/x-ndjson')) return { contentType: 'application/x-ndjson', body: '{"user": 7, "attributes": {"plan": "gold"}}\n' };
  if (!(key in bodies)) throw new Error(`robustness.test.ts has no valid body for ${key}: add one`);
  return { contentType: 'application/json', body: bodies[key] };
}

/** The operation's path with the fixture's real ids, one parameter optionally replaced by a raw segment. */
function pathOf(op: Operation, override?: { param: string; segment: string }, values = fixture.values): string {
  let path = op.path;
  for (const param of op.pathParams) {
    const named =
      param !== 'name'
        ? param
        : op.path.startsWith('/consumers')
          ? 'consumer'
          : op.path.startsWith('/tenants/{tenant}/webhooks')
            ? 'webhook'
            : op.path.startsWith('/tenants/{tenant}/frequency-caps')
              ? 'cap'
              : param;
    let value = override?.param === param ? override.segment : encodeURIComponent(values[named]);
    if (param === 'id' && op.path.startsWith('/procedures')) value = override?.param === param ? override.segment : encodeURIComponent(values.procedure);
    if (param === 'id' && op.path.includes('/deliveries/')) value = override?.param === param ? override.segment : encodeURIComponent(values.delivery);
    path = path.replace(`{${param}}`, value);
  }
  if (op.query.some((q) => q.name === 'tenant')) path += `${path.includes('?') ? '&' : '?'}tenant=${fixture.a.name}`;
  for (const query of op.query.filter((q) => q.required && q.name !== 'tenant')) {
    if (!(query.name in REQUIRED_QUERY_VALUES)) throw new Error(`robustness.test.ts has no valid value for the query parameter ${query.name}: add one`);
    path += `${path.includes('?') ? '&' : '?'}${query.name}=${REQUIRED_QUERY_VALUES[query.name]}`;
  }
  return path;
}

/** A valid value of each required query parameter, so a hostile path parameter is what the answer must name. */
const REQUIRED_QUERY_VALUES: Record<string, string> = { steps: 'entry,done' };

function withBody(op: Operation, headers: Record<string, string> = {}): Sent {
  const sent: Sent = { method: op.method, path: pathOf(op), headers };
  if (op.bodyTypes.length === 0) return sent;
  const { contentType, body } = validBody(op);
  return { ...sent, headers: { 'content-type': contentType, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

const admin = () => ({ authorization: `Bearer ${inject('adminToken')}` });

beforeAll(async () => {
  const a = await createTenant(2);
  const b = await createTenant(2);
  const revoked = await api('POST', `/tenants/${a.name}/keys`, { body: { name: 'to-revoke' } });
  expect((await api('DELETE', `/tenants/${a.name}/keys/${revoked.body.id}`)).status).toBe(200);
  const crowd = await api('PUT', `/tenants/${a.name}/crowds/base`, { body: '1\n2\n3\n', headers: { 'content-type': 'text/plain' } });
  expect(crowd.status, JSON.stringify(crowd.body)).toBe(201);
  expect((await api('POST', `/tenants/${a.name}/profiles`, { body: [{ user: 7, attributes: { plan: 'gold' } }] })).status).toBe(200);
  const workflow = await api('POST', `/tenants/${a.name}/workflows`, { body: { name: uniqueName('wf'), definition: workflowDefinition } });
  expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
  const started = await api('POST', `/tenants/${a.name}/workflows/${workflow.body.id}/start`, { body: { crowd: 'base' } });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const done = await api('GET', `/procedures/${started.body.procedureId}?wait=30`);
  expect(done.body.state, JSON.stringify(done.body)).toBe('done');
  expect((await api('PUT', `/consumers/robust?tenant=${a.name}`, { body: { start: 'tail' } })).status).toBe(201);
  // A loopback destination (nothing listens on port 9) needs the tenant's permission for private addresses.
  expect((await api('PUT', `/tenants/${a.name}/limits`, { body: { webhookPrivateAddresses: true } })).status).toBe(200);
  expect((await api('POST', `/tenants/${a.name}/webhooks`, { body: { name: 'robust-hook', url: 'http://127.0.0.1:9/hook' } })).status).toBe(201);
  expect((await api('POST', `/tenants/${a.name}/frequency-caps`, { body: { name: 'robust-cap', maxDeliveries: 2, window: '1d' } })).status).toBe(201);
  fixture = {
    a,
    b,
    revokedKey: revoked.body.secret,
    values: {
      tenant: a.name,
      keyId: a.keyId,
      name: 'base',
      consumer: 'robust',
      webhook: 'robust-hook',
      cap: 'robust-cap',
      delivery: 'wh_0123456789abcdef-1-0',
      user: '7',
      id: workflow.body.id,
      procedure: started.body.procedureId,
      version: '1',
      iid: started.body.instanceId,
      step: 'entry',
    },
  };
  const document = await api('GET', '/openapi.json');
  operations = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.body.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const parameters: { in: string; name: string; required?: boolean; schema?: { type?: string | string[] } }[] = op.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, numeric: [p.schema?.type].flat().some((t) => t === 'integer' || t === 'number'), required: p.required === true })),
        bodyTypes: Object.keys(op.requestBody?.content ?? {}),
      });
    }
  }
}, 120_000);

describe('robustness: hostile input on every documented route', () => {
  it('covers every route of the OpenAPI document', () => {
    expect(operations.length).toBeGreaterThan(40);
    for (const op of operations) for (const param of op.pathParams) expect(PARAM_WORDS, `${op.method} ${op.path}`).toHaveProperty(param);
    for (const op of operations.filter((o) => o.bodyTypes.length > 0)) expect(() => validBody(op)).not.toThrow();
  });

  it(
    'refuses missing, malformed, unknown and revoked credentials with 401',
    async () => {
      const failures: string[] = [];
      for (const op of operations.filter((o) => !PUBLIC.has(`${o.method} ${o.path}`))) {
        await check(failures, withBody(op), { status: [401], mentions: /credentials|Bearer/ });
        await check(failures, withBody(op, { authorization: 'Basic YWRtaW46YWRtaW4=' }), { status: [401], mentions: /Bearer/ });
        await check(failures, withBody(op, { authorization: 'Bearer cfk_not-a-real-key' }), { status: [401], mentions: /token|key/i });
        await check(failures, withBody(op, { authorization: `Bearer ${fixture.revokedKey}` }), { status: [401], mentions: /revoked/ });
        await check(failures, withBody(op, { cookie: 'cf_session=9999999999999.forged' }), { status: [401], mentions: /credentials/ });
      }
      expect(failures).toEqual([]);
    },
    HEAVY_TIMEOUT_MS,
  );

  it("answers another tenant's key with 404 (or 403 for admin calls) and changes nothing", async () => {
    const failures: string[] = [];
    const other = { authorization: `Bearer ${fixture.b.key}` };
    for (const op of operations) {
      const key = `${op.method} ${op.path}`;
      const namesTenantA = op.pathParams.length > 0 || op.query.some((q) => q.name === 'tenant') || key === 'POST /events';
      if (PUBLIC.has(key) || !namesTenantA) continue;
      if (ADMIN_ONLY.has(key)) await check(failures, withBody(op, other), { status: [403], mentions: /admin/ });
      // Key management needs the `keys` scope, which the other tenant's key lacks: refused before any tenant lookup.
      else if (op.path.startsWith('/tenants/{tenant}/keys')) await check(failures, withBody(op, other), { status: [403], mentions: /scope/ });
      // An event batch names its tenant in the body, so another tenant there is bad input (400), not a missing path.
      else await check(failures, withBody(op, other), { status: [key === 'POST /events' ? 400 : 404], mentions: /tenant|procedure/i });
    }
    expect(failures).toEqual([]);
    const still = await api('GET', `/tenants/${fixture.a.name}/workflows/${fixture.values.id}`);
    expect(still.status).toBe(200);
    expect(still.body.running?.instanceId).toBe(fixture.values.iid);
  });

  it(
    'refuses odd path parameters (NUL, .., very long, negative, fractional, unknown) with a 4xx naming the parameter',
    async () => {
      const failures: string[] = [];
      for (const op of operations) {
        for (const param of op.pathParams) {
          const creates = CREATES_BY_NAME.has(`${op.method} ${op.path}:${param}`);
          // The values of one parameter go out together (each is independent of the others) to keep the run short.
          await Promise.all(
            HOSTILE_SEGMENTS.map(async (segment) => {
              const sent = { ...withBody(op, admin()), path: pathOf(op, { param, segment }) };
              const status = await check(failures, sent, { mentions: PARAM_WORDS[param], allowSuccess: creates });
              // A hostile value that is a valid name was created: remove it so later calls see only the fixture.
              if (creates && status >= 200 && status < 300) await raw({ method: 'DELETE', path: sent.path, headers: admin() });
            }),
          );
          for (const segment of DOT_SEGMENTS) {
            await check(failures, { ...withBody(op, admin()), path: pathOf(op, { param, segment }) }, { allowRedirect: true, allowSuccess: true });
          }
        }
      }
      expect(failures).toEqual([]);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'refuses malformed, empty, mistyped and wrongly shaped JSON bodies with a 4xx naming the problem',
    async () => {
      const failures: string[] = [];
      for (const op of operations.filter((o) => o.bodyTypes.includes('application/json') && !o.bodyTypes.includes('text/plain'))) {
        const { body } = validBody(op);
        const send = (payload: string | Uint8Array, contentType = 'application/json') =>
          ({ method: op.method, path: pathOf(op), headers: { ...admin(), 'content-type': contentType }, body: payload }) satisfies Sent;
        await check(failures, send('{"name": '), { status: [400], mentions: /JSON/ });
        await check(failures, send(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), { status: [400], mentions: /JSON/ });
        await check(failures, send('<tenant name="x"/>', 'text/xml'), { status: [415], mentions: 'text/xml' });
        await check(failures, send('name=x', 'application/x-www-form-urlencoded'), { status: [415], mentions: 'application/x-www-form-urlencoded' });
        await check(failures, send(''), { status: [400], mentions: /empty/ });
        await check(failures, send('null'), { status: [400], mentions: /expected|body/ });
        await check(failures, send('"a string"'), { status: [400], mentions: /expected|body/ });
        await check(failures, send('9'.repeat(400)), { status: [400], mentions: /expected|body/ });
        await check(failures, send('['.repeat(100_000) + ']'.repeat(100_000)), { status: [400], mentions: /expected|body|JSON/ });
        await check(failures, send(JSON.stringify(Array.isArray(body) ? body[0] : [body])), { status: [400], mentions: /expected|body/ });
        // Each top-level field in turn gets a value of the wrong type.
        const sample = (Array.isArray(body) ? body[0] : body) as Record<string, unknown>;
        for (const [field, value] of Object.entries(sample)) {
          if (UNION_TYPED_FIELDS.has(`${op.method} ${op.path}:${field}`)) continue;
          for (const wrong of wrongValues(value)) {
            const mutated = { ...sample, [field]: wrong };
            await check(failures, send(JSON.stringify(Array.isArray(body) ? [mutated] : mutated)), { status: [400], mentions: field });
          }
        }
        // Every string in the body with a NUL, a lone surrogate or 20,000 characters: refused or stored, never a 500.
        for (const [path, mutatedBody] of stringMutations(body)) {
          await check(failures, send(mutatedBody), { mentions: path.at(-1)!, allowSuccess: true });
        }
        // Every number in the body (ids, counts, cursors, versions) out of range or not whole.
        for (const [path, mutatedBody] of numberMutations(body)) {
          await check(failures, send(mutatedBody), { status: [400, 404], mentions: path.at(-1)! });
        }
      }
      expect(failures).toEqual([]);
    },
    HEAVY_TIMEOUT_MS,
  );

  it('refuses hostile crowd upload bodies with a 4xx naming the line or format, storing nothing', async () => {
    const failures: string[] = [];
    for (const op of operations.filter((o) => o.bodyTypes.includes('text/plain'))) {
      const path = pathOf(op, { param: 'name', segment: 'hostile-upload' });
      const send = (payload: string | Uint8Array, contentType: string) =>
        ({ method: op.method, path, headers: { ...admin(), 'content-type': contentType }, body: payload }) satisfies Sent;
      await check(failures, send('[1, 2', 'application/json'), { status: [400], mentions: /JSON/ });
      await check(failures, send('{"users": [1]}', 'application/json'), { status: [400], mentions: /array|JSON/ });
      await check(failures, send('1\nabc\n', 'text/plain'), { status: [400], mentions: 'abc' });
      await check(failures, send('1\n-5\n', 'text/csv'), { status: [400], mentions: '-5' });
      await check(failures, send('1\n1.5\n', 'text/plain'), { status: [400], mentions: '1.5' });
      await check(failures, send('4294967296\n', 'text/plain'), { status: [400], mentions: '4294967296' });
      await check(failures, send('9'.repeat(5000), 'text/plain'), { status: [400], mentions: /line 1\b/i });
      await check(failures, send('1\u00002\n', 'text/plain'), { status: [400], mentions: /line 1\b/i });
      await check(failures, send(new Uint8Array([0x3a, 0x30, 0, 0, 1]), 'application/octet-stream'), { status: [400], mentions: /roaring/ });
      await check(failures, send('<ids/>', 'text/xml'), { status: [415], mentions: 'text/xml' });
    }
    expect(failures).toEqual([]);
    expect((await api('GET', `/tenants/${fixture.a.name}/crowds/hostile-upload`)).status).toBe(404);
  });

  it(
    'refuses hostile query values with a 4xx naming the parameter',
    async () => {
      const failures: string[] = [];
      for (const op of operations.filter((o) => o.query.length > 0)) {
        for (const query of op.query) {
          const values = query.numeric ? HOSTILE_NUMBERS : HOSTILE_STRINGS;
          for (const value of values) {
            const base = pathOf(op)
              .replace(new RegExp(`([?&])${query.name}=[^&]*&?`), '$1')
              .replace(/[?&]$/, '');
            const path = `${base}${base.includes('?') ? '&' : '?'}${query.name}=${value}`;
            // A free-text filter (a type, a workflow id) may match nothing: 200 with an empty list is right too.
            await check(
              failures,
              { method: op.method, path, headers: admin() },
              { mentions: query.name, allowSuccess: !query.numeric && query.name !== 'tenant' },
            );
          }
        }
        await check(
          failures,
          { method: op.method, path: `${pathOf(op)}${pathOf(op).includes('?') ? '&' : '?'}zzz=1`, headers: admin() },
          { status: [400], mentions: 'zzz' },
        );
      }
      expect(failures).toEqual([]);
    },
    HEAVY_TIMEOUT_MS,
  );
});
