import fc from 'fast-check';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { api, baseUrl, createTenant, uniqueName } from '../helpers/api';

// Property-based fuzzing of every parser a request reaches, over real HTTP: crowd uploads (text, CSV, JSON, roaring
// bytes), event batches, workflow definitions, CEL conditions, cron expressions, durations, names, cookies and
// headers. Each generated request must get a 2xx, or a 4xx whose {error: {code, message}} names the problem; never a
// 5xx. After every family the server still answers. Runs are few per family (FUZZ_RUNS) to keep the suite short;
// the seed fast-check prints on a failure replays it.

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const TIMEOUT_MS = 120_000;

let tenant: Awaited<ReturnType<typeof createTenant>>;

type Sent = { method: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array<ArrayBuffer> };

/** Sends a request; fails the property on a 5xx or on a 4xx without the uniform error body. */
async function answersWell(sent: Sent): Promise<number> {
  const response = await fetch(`${baseUrl()}/api/v1${sent.path}`, { method: sent.method, headers: sent.headers, body: sent.body, redirect: 'manual' });
  const text = await response.text();
  const where = `${sent.method} ${sent.path.slice(0, 200)} → ${response.status} ${text.slice(0, 300)}`;
  expect(response.status, where).toBeLessThan(500);
  // Next.js itself answers a method a route file does not export with a bare 405 (an Allow header, no body).
  if (response.status === 405 && text === '') return response.status;
  if (response.status >= 400) {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    expect(typeof body.error?.code, where).toBe('string');
    expect(typeof body.error?.message === 'string' && body.error.message.length > 0, where).toBe(true);
  }
  return response.status;
}

async function expectHealthy(): Promise<void> {
  expect((await api('GET', `/tenants/${tenant.name}`)).status).toBe(200);
  expect((await api('GET', `/tenants/${tenant.name}/crowds`, { token: tenant.key })).status).toBe(200);
}

const admin = () => ({ authorization: `Bearer ${inject('adminToken')}` });
const property = <T>(arbitrary: fc.Arbitrary<T>, check: (value: T) => Promise<unknown>) =>
  fc.assert(
    fc.asyncProperty(arbitrary, async (v) => void (await check(v))),
    { numRuns: RUNS },
  );

/** Numbers around every boundary a parser checks (uint32, safe integers, floats, negatives). */
const edgyNumber = fc.oneof(
  fc.nat(),
  fc.integer({ min: -10, max: 10 }),
  fc.constantFrom(4294967295, 4294967296, 2 ** 53, -1, 1.5, 1e308, -0, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true }),
);
const idToken = fc.oneof(edgyNumber.map(String), fc.string({ maxLength: 12 }), fc.constantFrom('0x10', '1e3', ' 7 ', '+5', '١٢', '\u0000', '"', '1,2', ''));
const separator = fc.constantFrom('\n', '\r\n', ',', ' ', '\t', ';', '');

const CEL_ATOMS = [
  'true',
  'false',
  'user',
  'now',
  'event.type',
  'event.data.amount',
  'profile.plan',
  'profile.age',
  '"vip"',
  '1',
  '2.5',
  '[1, 2]',
  'inCrowd("base")',
  "timestamp('2026-01-01T00:00:00Z')",
  'null',
  '{}',
  'size(event.type)',
];
const CEL_BINARY = ['&&', '||', '==', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', 'in'];
/** CEL built from the grammar's pieces (often well-typed, often not) mixed with arbitrary text. */
const celCondition: fc.Arbitrary<string> = fc.letrec<{ expr: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...CEL_ATOMS),
    fc.tuple(tie('expr'), fc.constantFrom(...CEL_BINARY), tie('expr')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('expr').map((e) => `!(${e})`),
    tie('expr').map((e) => `(${e})`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([c, a, b]) => `${c} ? ${a} : ${b}`),
    fc.tuple(fc.constantFrom('event.type', 'profile.plan'), fc.string({ maxLength: 8 })).map(([v, p]) => `${v}.matches(${JSON.stringify(p)})`),
    fc.string({ maxLength: 30 }),
  ),
})).expr;

const cronField = fc.oneof(
  fc.constant('*'),
  fc.nat({ max: 70 }).map(String),
  fc.tuple(fc.nat({ max: 70 }), fc.nat({ max: 70 })).map(([a, b]) => `${a}-${b}`),
  fc.nat({ max: 70 }).map((n) => `*/${n}`),
  fc.constantFrom('MON', 'JAN', '?', 'L', '#', ',', '-1', '1,2,3', 'x'),
);
const cronExpression = fc.oneof(
  fc.array(cronField, { minLength: 0, maxLength: 8 }).map((fields) => fields.join(' ')),
  fc.string({ maxLength: 30 }),
);
const duration = fc.oneof(
  fc.tuple(fc.oneof(fc.nat(), fc.constantFrom(0, 1e20, 2 ** 53)), fc.constantFrom('ms', 's', 'm', 'h', 'd', 'w', 'y', '')).map(([n, unit]) => `${n}${unit}`),
  fc
    .array(fc.tuple(fc.nat({ max: 1e6 }), fc.constantFrom('ms', 's', 'm', 'h', 'd', 'w')), { maxLength: 6 })
    .map((parts) => parts.map(([n, u]) => `${n}${u}`).join('')),
  fc.string({ maxLength: 12 }),
);
const stepName = fc.oneof(fc.constantFrom('entry', 'next', 'done', '', '.', '..', 'a/b', 'x'.repeat(300)), fc.string({ maxLength: 16 }));
const step = fc.oneof(
  fc.record({ name: stepName, kind: fc.constant('direct'), next: fc.option(stepName, { nil: undefined }) }, { requiredKeys: ['name', 'kind'] }),
  fc.record({ name: stepName, kind: fc.constant('branch'), branches: fc.array(fc.record({ condition: celCondition, next: stepName }), { maxLength: 3 }) }),
  fc.record(
    { name: stepName, kind: fc.constant('timer'), cron: cronExpression, condition: fc.option(celCondition, { nil: undefined }), next: stepName },
    { requiredKeys: ['name', 'kind', 'cron', 'next'] },
  ),
  fc.record(
    { name: stepName, kind: fc.constant('delay'), after: duration, next: stepName, ttl: fc.option(duration, { nil: undefined }) },
    { requiredKeys: ['name', 'kind', 'after', 'next'] },
  ),
  fc.record({ name: stepName, kind: fc.constant('split'), paths: fc.array(fc.record({ percent: edgyNumber, next: stepName }), { maxLength: 3 }) }),
  fc.record({ name: stepName, kind: fc.constant('parallel'), actions: fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }), next: stepName }),
  fc.record({ name: fc.anything(), kind: fc.oneof(fc.string(), fc.anything()) }),
);
const definition = fc.oneof(fc.record({ steps: fc.array(step, { maxLength: 5 }) }), fc.anything({ maxDepth: 3 }));
/** Header values fetch can send: visible ASCII and spaces, with percent-escapes good and bad. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 8 }).map((bytes) => bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')),
  fc.constantFrom('%E0%A4%A', '%', '%zz', '%00', '9999999999999.forged', ''),
);

beforeAll(async () => {
  tenant = await createTenant(2);
  const crowd = await api('PUT', `/tenants/${tenant.name}/crowds/base`, { body: '1\n2\n3\n', headers: { 'content-type': 'text/plain' } });
  expect(crowd.status).toBe(201);
}, 60_000);

describe('fuzzing the parsers a request reaches: 2xx or 4xx, never 5xx', () => {
  it(
    'crowd uploads: text and CSV ids, JSON, roaring bytes (valid, corrupted and random)',
    async () => {
      const valid = serializeBitmap(new RoaringBitmap32([1, 2, 3, 70_000, 4294967295]));
      const upload = fc.oneof(
        fc
          .tuple(fc.array(idToken, { maxLength: 30 }), separator, fc.constantFrom('text/plain', 'text/csv'))
          .map(([ids, sep, type]) => ({ type, body: ids.join(sep) as string | Uint8Array<ArrayBuffer> })),
        fc
          .tuple(
            fc.oneof(
              fc.array(edgyNumber, { maxLength: 30 }).map((a) => JSON.stringify(a)),
              fc.json({ maxDepth: 3 }),
              fc.string({ maxLength: 40 }),
            ),
          )
          .map(([body]) => ({ type: 'application/json', body: body as string | Uint8Array<ArrayBuffer> })),
        fc.uint8Array({ maxLength: 200 }).map((body) => ({ type: 'application/octet-stream', body: body as string | Uint8Array<ArrayBuffer> })),
        fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 }), fc.nat({ max: valid.length })).map(([at, byte, cut]) => {
          const corrupted = Uint8Array.from(valid);
          corrupted[at] = byte;
          return { type: 'application/octet-stream', body: corrupted.slice(0, cut) as string | Uint8Array<ArrayBuffer> };
        }),
      );
      await property(upload, ({ type, body }) =>
        answersWell({ method: 'PUT', path: `/tenants/${tenant.name}/crowds/fuzzed`, headers: { ...admin(), 'content-type': type }, body }),
      );
      await expectHealthy();
    },
    TIMEOUT_MS,
  );

  it(
    'event batches',
    async () => {
      const event = fc.record(
        {
          user: fc.oneof(edgyNumber, fc.string({ maxLength: 5 })),
          type: fc.oneof(fc.string({ maxLength: 140 }), fc.anything()),
          data: fc.anything({ maxDepth: 4 }),
          time: fc.oneof(
            edgyNumber,
            fc.string({ maxLength: 30 }),
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          ),
        },
        { requiredKeys: [] },
      );
      const batch = fc.oneof(
        fc.record({ events: fc.array(event, { maxLength: 20 }) }),
        fc.record({ tenant: fc.oneof(fc.constant(tenant.name), fc.string()), events: fc.array(event, { maxLength: 5 }) }),
        fc.anything({ maxDepth: 3 }),
      );
      await property(batch, (body) =>
        answersWell({
          method: 'POST',
          path: '/events',
          headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body) ?? '',
        }),
      );
      await expectHealthy();
    },
    TIMEOUT_MS,
  );

  it(
    'workflow definitions with CEL conditions, crons and durations',
    async () => {
      await property(fc.tuple(fc.string({ maxLength: 20 }), definition), ([name, def]) =>
        answersWell({
          method: 'POST',
          path: `/tenants/${tenant.name}/workflows`,
          headers: { ...admin(), 'content-type': 'application/json' },
          body: JSON.stringify({ name: `${uniqueName('fz')}${name}`, definition: def }),
        }),
      );
      await expectHealthy();
    },
    TIMEOUT_MS,
  );

  it(
    'CEL conditions alone, in a branch step',
    async () => {
      await property(celCondition, async (condition) => {
        const def = {
          steps: [
            {
              name: 'entry',
              kind: 'branch',
              branches: [
                { condition, next: 'done' },
                { condition: 'true', next: 'done' },
              ],
            },
            { name: 'done', kind: 'direct' },
          ],
        };
        const status = await answersWell({
          method: 'POST',
          path: `/tenants/${tenant.name}/workflows`,
          headers: { ...admin(), 'content-type': 'application/json' },
          body: JSON.stringify({ name: uniqueName('cel'), definition: def }),
        });
        expect([201, 400]).toContain(status);
      });
      await expectHealthy();
    },
    TIMEOUT_MS,
  );

  it(
    'names in paths and bodies: crowds, tenants, keys, consumers',
    async () => {
      const name = fc.oneof(
        fc.string({ maxLength: 80 }),
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        fc.constantFrom('.', '..', '...', 'a/b', ' ', '\u0000', '%', '\u202e', 'x'.repeat(300)),
      );
      await property(name, async (n) => {
        const segment = encodeURIComponent(n);
        await answersWell({
          method: 'PUT',
          path: `/tenants/${tenant.name}/crowds/${segment}`,
          headers: { ...admin(), 'content-type': 'text/plain' },
          body: '5\n',
        });
        await answersWell({ method: 'GET', path: `/tenants/${tenant.name}/crowds/${segment}`, headers: admin() });
        await answersWell({
          method: 'POST',
          path: '/tenants',
          headers: { ...admin(), 'content-type': 'application/json' },
          body: JSON.stringify({ name: n, partitions: 1 }),
        });
        await answersWell({
          method: 'POST',
          path: `/tenants/${tenant.name}/keys`,
          headers: { ...admin(), 'content-type': 'application/json' },
          body: JSON.stringify({ name: n }),
        });
        await answersWell({
          method: 'PUT',
          path: `/consumers/${segment}?tenant=${tenant.name}`,
          headers: { ...admin(), 'content-type': 'application/json' },
          body: JSON.stringify({ start: 'tail' }),
        });
      });
      // Raw path segments with any percent-escape, valid UTF-8 or not.
      await property(headerValue, (raw) =>
        answersWell({ method: 'GET', path: `/tenants/${tenant.name}/crowds/${raw.replace(/[/?#\s]/g, '_') || 'x'}`, headers: admin() }),
      );
      expect((await api('GET', `/tenants/${tenant.name}`)).status).toBe(200);
      await expectHealthy();
    },
    TIMEOUT_MS,
  );

  it(
    'cookies and headers: session cookies, authorization, content types, origins',
    async () => {
      await property(
        fc.tuple(headerValue, headerValue, headerValue, headerValue, fc.constantFrom('GET', 'POST', 'DELETE')),
        async ([cookie, authorization, contentType, origin, method]) => {
          const withBody = method === 'POST';
          const body = withBody ? JSON.stringify({ name: uniqueName('hdr') }) : undefined;
          await answersWell({
            method,
            path: method === 'DELETE' ? `/tenants/${uniqueName('none')}` : '/tenants',
            headers: { cookie: `cf_session=${cookie}` },
            body,
          });
          await answersWell({ method, path: '/tenants', headers: { authorization, ...(withBody ? { 'content-type': contentType } : {}) }, body });
          await answersWell({
            method: 'POST',
            path: '/tenants',
            headers: { ...admin(), 'content-type': contentType, origin, 'sec-fetch-site': origin.slice(0, 12) },
            body: JSON.stringify({ name: uniqueName('ct') }),
          });
        },
      );
      await expectHealthy();
    },
    TIMEOUT_MS,
  );
});
