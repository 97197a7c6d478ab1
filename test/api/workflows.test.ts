import { beforeAll, describe, expect, it, inject } from 'vitest';
import { parseEnv } from '../../server/env';
import { app, registerApp } from '../../server/app';
import { createApp } from '../../server/create-app';
import { db } from '../helpers/app-db';
import { api, createTenant, expectError, uniqueName } from '../helpers/api';

const definition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type == "purchase"', next: 'thanks' },
        { condition: 'true', next: 'nightly' },
      ],
    },
    { name: 'nightly', kind: 'timer', cron: '0 0 21 * * *', next: 'wait' },
    { name: 'wait', kind: 'delay', after: '2h', next: 'coin' },
    {
      name: 'coin',
      kind: 'split',
      paths: [
        { percent: 50, next: 'thanks' },
        { percent: 50, next: 'both' },
      ],
    },
    { name: 'both', kind: 'parallel', actions: ['email', 'push'], next: 'thanks' },
    { name: 'thanks', kind: 'direct', enterAction: 'thank_you' },
  ],
};
const draft = { positions: { entry: { x: 0, y: 0 }, thanks: { x: 200, y: 300 } }, labels: { entry: 'Did they buy?' } };
const schedule = { cron: '0 0 8 * * MON', crowd: 'weekly', enabled: true };
/** The schedule as stored and shown: with the catch-up and re-entry defaults. */
const savedSchedule = { ...schedule, catchUp: 'skip', startingDeadlineSeconds: 3600, reentry: 'exclude' };

const base = (tenant: string) => `/tenants/${tenant}/workflows`;

async function create(tenant: string, body: Record<string, unknown> = {}, token?: string) {
  const created = await api('POST', base(tenant), { body: { name: uniqueName('wf'), definition, ...body }, token });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

beforeAll(async () => {
  // The delete test records an instance the way the engine does: in the database the server uses.
  await app().close();
  registerApp(createApp({ env: parseEnv({ ...process.env, DATABASE_URL: inject('serverDatabaseUrl') }) }));
});

describe('workflows API', () => {
  it('creates a workflow as version 1 and gets it by id or name', async () => {
    const tenant = await createTenant();
    const name = uniqueName('welcome');
    const created = await api('POST', base(tenant.name), { token: tenant.key, body: { name, definition, draft, schedule } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name, version: 1, definition, draft, schedule, running: null });
    expect(created.body.id).toMatch(/^wf_/);
    expect(Date.parse(created.body.createdAt)).not.toBeNaN();
    expect((await api('GET', `${base(tenant.name)}/${created.body.id}`, { token: tenant.key })).body).toEqual(created.body);
    expect((await api('GET', `${base(tenant.id)}/${encodeURIComponent(name)}`)).body).toEqual(created.body);
  });

  it('saves a schedule naming a crowd the tenant does not have, with an unknown_crowd warning until it exists', async () => {
    const tenant = await createTenant();
    const created = await api('POST', base(tenant.name), {
      body: { name: uniqueName('later'), definition, schedule: { ...schedule, catchUp: 'latest', startingDeadlineSeconds: 600, reentry: 'allow' } },
    });
    expect(created.status).toBe(201);
    expect(created.body.schedule).toEqual({ ...schedule, catchUp: 'latest', startingDeadlineSeconds: 600, reentry: 'allow' });
    expect(created.body.warnings).toEqual([
      {
        step: null,
        code: 'unknown_crowd',
        message: `Schedule crowd "weekly" does not exist in tenant "${tenant.name}"; its firings will fail until it is uploaded`,
      },
    ]);
    expect((await api('PUT', `/tenants/${tenant.name}/crowds/weekly`, { body: '1\n2', headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    expect((await api('PUT', `${base(tenant.name)}/${created.body.id}`, { body: { schedule } })).body).toMatchObject({ schedule: savedSchedule, warnings: [] });
    const refused = expectError(
      await api('POST', base(tenant.name), { body: { name: 'x', definition, schedule: { ...schedule, catchUp: 'all' } } }),
      400,
      'invalid_workflow',
    );
    expect(refused.message).toMatch(/catchUp/);
    const badReentry = expectError(
      await api('POST', base(tenant.name), { body: { name: 'x', definition, schedule: { ...schedule, reentry: 'once' } } }),
      400,
      'invalid_workflow',
    );
    expect(badReentry.message).toMatch(/reentry/);
  });

  it('stores an empty draft and no schedule when none are given', async () => {
    const tenant = await createTenant();
    const created = await create(tenant.name);
    expect(created).toMatchObject({ draft: { positions: {}, labels: {} }, schedule: null });
    expect(created.definition).not.toHaveProperty('positions');
  });

  it('lists workflows by name with version, updatedAt and running', async () => {
    const tenant = await createTenant();
    const b = await create(tenant.name, { name: 'b-journey' });
    const a = await create(tenant.name, { name: 'a-journey', schedule });
    const list = await api('GET', base(tenant.name), { token: tenant.key });
    expect(list.status).toBe(200);
    expect(list.body.workflows).toEqual([
      { id: a.id, name: 'a-journey', version: 1, schedule: savedSchedule, createdAt: a.createdAt, updatedAt: a.updatedAt, running: null },
      { id: b.id, name: 'b-journey', version: 1, schedule: null, createdAt: b.createdAt, updatedAt: b.updatedAt, running: null },
    ]);
    expect((await api('GET', base((await createTenant()).name))).body.workflows).toEqual([]);
  });

  it('makes a new immutable version on every save with a definition, and none on a draft-only save', async () => {
    const tenant = await createTenant();
    const created = await create(tenant.name, { draft });
    const path = `${base(tenant.name)}/${created.id}`;
    const longer = { steps: [...definition.steps.slice(0, 5), { name: 'thanks', kind: 'direct', enterAction: 'thanks_v2' }] };

    const saved = await api('PUT', path, { body: { definition: longer } });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ version: 2, definition: longer, draft });
    expect(Date.parse(saved.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));

    const newDraft = { positions: { entry: { x: 5, y: 5 } }, labels: {} };
    const drafted = await api('PUT', path, { body: { draft: newDraft } });
    expect(drafted.body).toMatchObject({ version: 2, definition: longer, draft: newDraft });

    const again = await api('PUT', path, { body: { definition, name: 'renamed', schedule } });
    expect(again.body).toMatchObject({ version: 3, name: 'renamed', definition, schedule });
    expect((await api('PUT', path, { body: { schedule: null } })).body).toMatchObject({ version: 3, schedule: null });

    const versions = await api('GET', `${path}/versions`);
    expect(versions.body).toMatchObject({ workflowId: created.id, current: 3 });
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect((await api('GET', `${path}/versions/1`)).body).toEqual({ workflowId: created.id, version: 1, definition, createdAt: created.createdAt });
    expect((await api('GET', `${path}/versions/2`)).body).toEqual({ workflowId: created.id, version: 2, definition: longer, createdAt: saved.body.updatedAt });

    expectError(await api('PUT', `${path}/versions/1`, { body: { definition: longer } }), 405, 'method_not_allowed');
    expectError(await api('DELETE', `${path}/versions/1`), 405, 'method_not_allowed');
    expect((await api('GET', `${path}/versions/1`)).body.definition).toEqual(definition);
  });

  it('gives concurrent saves distinct version numbers', async () => {
    const tenant = await createTenant();
    const created = await create(tenant.name);
    const path = `${base(tenant.name)}/${created.id}`;
    const saves = await Promise.all([1, 2, 3, 4, 5].map((n) => api('PUT', path, { body: { definition: { steps: [{ name: `only_${n}`, kind: 'direct' }] } } })));
    expect(saves.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const versions = await api('GET', `${path}/versions`);
    expect(versions.body.current).toBe(6);
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual([6, 5, 4, 3, 2, 1]);
    const names = await Promise.all([2, 3, 4, 5, 6].map(async (v) => (await api('GET', `${path}/versions/${v}`)).body.definition.steps[0].name));
    expect(names.sort()).toEqual(['only_1', 'only_2', 'only_3', 'only_4', 'only_5']);
  });

  it('refuses an invalid workflow with every problem, writing nothing', async () => {
    const tenant = await createTenant();
    const name = uniqueName('broken');
    const broken = {
      steps: [
        { name: 'entry', kind: 'branch', branches: [{ condition: 'event.type ==', next: 'gone' }] },
        { name: 'twin', kind: 'timer', cron: '0 21 * * *', next: 'entry' },
        { name: 'twin', kind: 'delay', after: 'later', next: 'entry' },
      ],
    };
    const refused = await api('POST', base(tenant.name), { body: { name, definition: broken, schedule: { cron: 'bad', crowd: 'x' } } });
    const error = expectError(refused, 400, 'invalid_workflow');
    const problems = (error.details as { problems: { step: string | null; code: string; message: string }[] }).problems;
    expect(problems.map((p) => `${p.step}:${p.code}`).sort()).toEqual(
      ['entry:bad_condition', 'entry:unknown_next', 'twin:bad_cron', 'twin:bad_duration', 'twin:duplicate_step', 'twin:unreachable', 'null:bad_cron'].sort(),
    );
    expect(error.message).toMatch(/^The workflow has 7 problems: /);
    expect(problems.find((p) => p.code === 'unknown_next')!.message).toBe(
      'Step "entry" branches[0].next points at "gone", which is not a step of this workflow',
    );
    expectError(await api('GET', `${base(tenant.name)}/${encodeURIComponent(name)}`), 404, 'not_found');
    expect((await api('GET', base(tenant.name))).body.workflows).toEqual([]);

    const created = await create(tenant.name);
    const path = `${base(tenant.name)}/${created.id}`;
    const update = await api('PUT', path, { body: { name: 'should-not-stick', definition: { steps: [{ name: 'x', kind: 'delay', next: 'x' }] } } });
    expect((expectError(update, 400, 'invalid_workflow').details as { problems: unknown[] }).problems).toEqual([
      { step: 'x', code: 'invalid_field', message: expect.stringMatching(/^Step "x" after: /) },
    ]);
    expect((await api('GET', path)).body).toEqual(created);
    expect((await api('GET', `${path}/versions`)).body.versions).toHaveLength(1);
  });

  it('refuses a stopAt in the past on save', async () => {
    const tenant = await createTenant();
    const refused = await api('POST', base(tenant.name), { body: { name: 'late', definition: { ...definition, stopAt: '2001-01-01T00:00:00Z' } } });
    expect(expectError(refused, 400, 'invalid_workflow').details).toEqual({
      problems: [{ step: null, code: 'bad_stop_at', message: expect.stringContaining('is in the past') }],
    });
    const future = await create(tenant.name, { definition: { ...definition, stopAt: '2099-01-01T00:00:00+02:00' } });
    expect(future.definition.stopAt).toBe('2099-01-01T00:00:00+02:00');
  });

  it('refuses malformed JSON, wrong types, unknown fields and empty saves', async () => {
    const tenant = await createTenant();
    const path = base(tenant.name);
    expectError(await api('POST', path, { body: '{"name": "x", "definition": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    expectError(await api('POST', path, { body: 'name=x', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expect(expectError(await api('POST', path, { body: { name: 42, definition } }), 400, 'validation_failed').message).toMatch(/^name: /);
    expect(expectError(await api('POST', path, { body: { name: 'no-definition' } }), 400, 'validation_failed').message).toMatch(/^definition: /);
    expect(expectError(await api('POST', path, { body: { name: 'x', definition, owner: 'me' } }), 400, 'validation_failed').message).toMatch(/owner/);
    expect(
      expectError(await api('POST', path, { body: { name: 'x', definition, draft: { positions: { a: { x: 'left' } } } } }), 400, 'validation_failed').message,
    ).toMatch(/^draft\.positions\.a\.x: /);
    const notAnObject = expectError(await api('POST', path, { body: { name: 'x', definition: [1, 2] } }), 400, 'invalid_workflow');
    expect(notAnObject.details).toEqual({
      problems: [{ step: null, code: 'invalid_field', message: expect.stringMatching(/^Workflow definition: .*expected object/) }],
    });
    const badSchedule = expectError(
      await api('POST', path, { body: { name: 'x', definition, schedule: { cron: '0 0 8 * * *', crowd: 7 } } }),
      400,
      'invalid_workflow',
    );
    expect(badSchedule.details).toEqual({ problems: [{ step: null, code: 'invalid_field', message: expect.stringMatching(/^Schedule crowd: /) }] });

    const huge = { steps: [{ name: 'e', kind: 'branch', branches: Array.from({ length: 30_000 }, () => ({ condition: 'event.type == "x"', next: 'e' })) }] };
    expect(expectError(await api('POST', path, { body: { name: 'huge', definition: huge } }), 413, 'payload_too_large').message).toMatch(/limit/);

    const created = await create(tenant.name);
    expectError(await api('PUT', `${path}/${created.id}`, { body: {} }), 400, 'bad_request');
    expectError(await api('PUT', `${path}/${created.id}`, { body: { version: 7 } }), 400, 'validation_failed');
    expectError(await api('GET', `${path}/${created.id}/versions/first`), 400, 'validation_failed');
    expectError(await api('GET', `${path}/${created.id}/versions/0`), 400, 'validation_failed');
  });

  it('refuses a duplicate name in a tenant with 409, but not across tenants', async () => {
    const a = await createTenant();
    const b = await createTenant();
    const first = await create(a.name, { name: 'Onboarding' });
    expect(expectError(await api('POST', base(a.name), { body: { name: 'Onboarding', definition } }), 409, 'conflict').message).toContain('"Onboarding"');
    await create(b.name, { name: 'Onboarding' });
    const other = await create(a.name, { name: 'Other' });
    expectError(await api('PUT', `${base(a.name)}/${other.id}`, { body: { name: 'Onboarding', definition } }), 409, 'conflict');
    expect((await api('GET', `${base(a.name)}/${other.id}/versions`)).body.versions).toHaveLength(1);
    expect((await api('GET', `${base(a.name)}/${first.id}`)).body.name).toBe('Onboarding');
  });

  it('answers 404 for unknown workflows and versions', async () => {
    const tenant = await createTenant();
    const path = base(tenant.name);
    expectError(await api('GET', `${path}/wf_missing`), 404, 'not_found');
    expectError(await api('PUT', `${path}/wf_missing`, { body: { definition } }), 404, 'not_found');
    expectError(await api('DELETE', `${path}/wf_missing`), 404, 'not_found');
    expectError(await api('GET', `${path}/wf_missing/versions`), 404, 'not_found');
    const created = await create(tenant.name);
    expect(expectError(await api('GET', `${path}/${created.id}/versions/2`), 404, 'not_found').message).toContain('Version 2');
    expectError(await api('GET', '/tenants/no-such-tenant/workflows'), 404, 'not_found');
  });

  it("isolates tenants: A's key gets 404 for B's workflows", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const mine = await create(b.name, {}, b.key);
    expectError(await api('GET', base(b.name), { token: a.key }), 404, 'not_found');
    expectError(await api('POST', base(b.name), { token: a.key, body: { name: 'x', definition } }), 404, 'not_found');
    // Even addressed through A's own tenant, B's workflow id is not found.
    for (const [method, suffix] of [
      ['GET', ''],
      ['PUT', ''],
      ['DELETE', ''],
      ['GET', '/versions'],
      ['GET', '/versions/1'],
    ]) {
      expectError(await api(method, `${base(a.name)}/${mine.id}${suffix}`, { token: a.key, body: method === 'PUT' ? { draft } : undefined }), 404, 'not_found');
      expectError(await api(method, `${base(b.name)}/${mine.id}${suffix}`, { token: a.key, body: method === 'PUT' ? { draft } : undefined }), 404, 'not_found');
    }
    expect((await api('GET', `${base(b.name)}/${mine.id}`, { token: b.key })).body).toEqual(mine);
    expectError(await api('GET', base(b.name), { token: null }), 401, 'unauthorized');
  });

  it('deletes a workflow and its versions, refusing while an instance is active', async () => {
    const tenant = await createTenant();
    const created = await create(tenant.name);
    const path = `${base(tenant.name)}/${created.id}`;
    const instanceId = `in_${created.id}`;
    // Written behind the server's engine, as 'starting' (active, but installed by its start procedure, never by a
    // tenant load): as 'running', an engine that loaded the tenant between two reads rebuilt it with no users (no
    // checkpoints), and the views answered its live count, 0, instead of the row's.
    await db().instance.create({
      data: { id: instanceId, tenantId: tenant.id, workflowId: created.id, version: 1, crowdName: 'all', state: 'starting', userCount: 1234n },
    });
    expect((await api('GET', path)).body.running).toEqual({ instanceId, userCount: 1234 });
    expect((await api('GET', base(tenant.name))).body.workflows[0].running).toEqual({ instanceId, userCount: 1234 });
    const refused = expectError(await api('DELETE', path), 409, 'conflict');
    expect(refused.message).toContain(instanceId);
    expect((await api('GET', path)).status).toBe(200);

    await db().instance.update({ where: { id: instanceId }, data: { state: 'stopped' } });
    expect((await api('GET', path)).body.running).toBeNull();
    expect((await api('DELETE', path, { token: tenant.key })).status).toBe(204);
    expectError(await api('GET', path), 404, 'not_found');
    expect(await db().workflowVersion.count({ where: { workflowId: created.id } })).toBe(0);
    // The name is free again.
    expect((await api('POST', base(tenant.name), { body: { name: created.name, definition } })).body.version).toBe(1);
  });
});
