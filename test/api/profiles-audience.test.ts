import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';

const ndjson = (rows: Array<{ user: number; attributes: Record<string, unknown> }>) => rows.map((row) => JSON.stringify(row)).join('\n');

describe('profile import, fields, audience and explain over HTTP', () => {
  it('imports NDJSON and CSV, lists the indexed fields, and estimates audiences with the plan', async () => {
    const tenant = await createTenant(2, ['read', 'manage']);
    const base = `/tenants/${tenant.name}`;
    const rows = Array.from({ length: 1_000 }, (_, user) => ({
      user,
      attributes: { plan: user % 4 === 0 ? 'pro' : 'free', age: 18 + (user % 50), signup: `2026-01-${String(1 + (user % 28)).padStart(2, '0')}T00:00:00Z` },
    }));
    const imported = await api('POST', `${base}/profiles/import`, {
      token: tenant.key,
      body: ndjson(rows),
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
    expect(imported.body).toMatchObject({ lines: 1_000, users: 1_000, created: 1_000, chunks: 1 });
    const csv = await api('POST', `${base}/profiles/import?types=zip:string`, {
      token: tenant.key,
      body: 'user,zip,address.country\n5,01234,NL\n2000,75001,FR\n',
      headers: { 'content-type': 'text/csv' },
    });
    expect(csv.body).toMatchObject({ lines: 2, created: 1 });
    expect((await api('GET', `${base}/profiles/5`, { token: tenant.key })).body.attributes).toEqual({
      plan: 'free',
      age: 23,
      signup: '2026-01-06T00:00:00Z',
      zip: '01234',
      address: { country: 'NL' },
    });

    const fields = await api('GET', `${base}/profiles/fields`, { token: tenant.key });
    expect(fields.status).toBe(200);
    expect(fields.body.profiles).toBe(1_001);
    const plan = fields.body.fields.find((f: { path: string }) => f.path === 'plan');
    expect(plan).toMatchObject({
      type: 'string',
      users: 1_000,
      types: { string: 1_000 },
      topValues: [
        { value: 'free', users: 750 },
        { value: 'pro', users: 250 },
      ],
      highCardinality: false,
    });
    expect(fields.body.fields.find((f: { path: string }) => f.path === 'age')).toMatchObject({ types: { number: 1_000 }, numbers: { scale: 0 } });
    expect(fields.body.fields.find((f: { path: string }) => f.path === 'address.country')).toMatchObject({ users: 2 });
    expect(fields.body.fields.find((f: { path: string }) => f.path === 'signup')).toMatchObject({ type: 'timestamp', types: { timestamp: 1_000 } });

    const audience = await api('POST', `${base}/audience`, { token: tenant.key, body: { condition: 'profile.plan == "pro" && profile.age >= 30', sample: 3 } });
    expect(audience.status, JSON.stringify(audience.body)).toBe(200);
    const expected = rows.filter((r) => r.attributes.plan === 'pro' && r.attributes.age >= 30).map((r) => r.user);
    expect(audience.body).toMatchObject({ count: expected.length, sample: expected.slice(0, 3), universe: 1_001, mode: 'plan', exact: true });

    const perUser = await api('POST', `${base}/audience`, { token: tenant.key, body: { condition: 'profile.plan.startsWith("pr") && profile.age >= 30' } });
    // Only the users with profile.age >= 30 (the planned part) are evaluated one by one.
    const older = rows.filter((r) => r.attributes.age >= 30).length;
    expect(perUser.body).toMatchObject({
      count: expected.length,
      low: expected.length,
      high: expected.length,
      confidence: 1,
      mode: 'per-user',
      exact: true,
      evaluated: older,
    });

    await api('PUT', `${base}/crowds/some`, { token: tenant.key, body: '0\n4\n8\n9\n3000', headers: { 'content-type': 'text/plain' } });
    const inCrowd = await api('POST', `${base}/audience`, { token: tenant.key, body: { condition: 'profile.plan == "pro" || user == 3000', crowd: 'some' } });
    expect(inCrowd.body).toMatchObject({ count: 4, sample: [0, 4, 8, 3000], universe: 5, mode: 'plan' });
    const timestamp = await api('POST', `${base}/audience`, {
      token: tenant.key,
      body: { condition: 'timestamp(profile.signup) < timestamp("2026-01-02T00:00:00Z")', crowd: 'some' },
    });
    expect(timestamp.body).toMatchObject({ count: 1, sample: [0], mode: 'plan' });
  });

  it('refuses a bad import line, a bad condition and an unknown crowd with a 4xx naming it', async () => {
    const tenant = await createTenant(2, ['read', 'manage']);
    const base = `/tenants/${tenant.name}`;
    const bad = expectError(
      await api('POST', `${base}/profiles/import`, {
        token: tenant.key,
        body: '{"user": 1, "attributes": {}}\n{"user": 1.5, "attributes": {}}',
        headers: { 'content-type': 'application/x-ndjson' },
      }),
      400,
      'validation_failed',
    );
    expect(bad.message).toContain('line 2');
    expect(bad.details).toMatchObject({ line: 2, committedLines: 0 });
    expectError(
      await api('POST', `${base}/profiles/import`, { token: tenant.key, body: '[]', headers: { 'content-type': 'application/json' } }),
      415,
      'unsupported_media_type',
    );
    expectError(
      await api('POST', `${base}/profiles/import?types=age:date`, { token: tenant.key, body: 'user,age\n1,2', headers: { 'content-type': 'text/csv' } }),
      400,
      'bad_request',
    );
    expect(
      expectError(await api('POST', `${base}/audience`, { token: tenant.key, body: { condition: 'profile.plan ==' } }), 400, 'invalid_condition').message,
    ).toMatch(/^The condition is not valid: .*\(at character \d+\)$/);
    expectError(await api('POST', `${base}/audience`, { token: tenant.key, body: { condition: 'true', crowd: 'nope' } }), 404, 'not_found');
    expect((await api('GET', `${base}/profiles/1`, { token: tenant.key })).status).toBe(404);
  });

  it('explains each condition of a workflow: plan or per user, and why', async () => {
    const tenant = await createTenant(2, ['read', 'manage']);
    const base = `/tenants/${tenant.name}`;
    const definition = {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'wait' },
            { condition: 'profile.age >= 30', next: 'wait' },
          ],
        },
        { name: 'wait', kind: 'timer', cron: '0 0 * * * *', condition: 'profile.plan == "pro" && has(profile.age)', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    };
    const created = await api('POST', `${base}/workflows`, { token: tenant.key, body: { name: 'explained', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const explained = await api('GET', `${base}/workflows/explained/explain`, { token: tenant.key });
    expect(explained.status).toBe(200);
    expect(explained.body.conditions.map((c: { step: string; mode: string }) => [c.step, c.mode])).toEqual([
      ['entry', 'per-user'],
      ['entry', 'plan'],
      ['wait', 'plan'],
    ]);
    expect(explained.body.conditions[0].reason).toContain('event');
    const draft = await api('POST', `${base}/workflows/explained/explain`, {
      token: tenant.key,
      body: { definition: { steps: [{ name: 'a', kind: 'timer', cron: '0 0 * * * *', condition: 'profile.name.startsWith("x")', next: 'a' }] } },
    });
    expect(draft.body.version).toBeNull();
    expect(draft.body.conditions[0]).toMatchObject({ step: 'a', mode: 'per-user' });
  });
});
