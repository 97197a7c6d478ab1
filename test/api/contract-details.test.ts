import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError, uniqueName } from '../helpers/api';
import { serverSql } from '../helpers/server-db';

// Contract details an outside review found where the API said one thing and did another (issue 35 §7).

type Tenant = Awaited<ReturnType<typeof createTenant>>;

const uploadCrowd = async (tenant: Tenant, name: string, users: number[]) =>
  expect(
    (await api('PUT', `/tenants/${tenant.name}/crowds/${name}`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } })).status,
  ).toBeLessThan(300);

/** Waits for a submitted instance operation on the server (its long poll), not on the test's clock. */
async function settled(submitted: { status: number; body: { procedureId: string } }): Promise<void> {
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
  const procedure = await api('GET', `/procedures/${encodeURIComponent(submitted.body.procedureId)}?wait=20`);
  expect(procedure.body.state, JSON.stringify(procedure.body)).toBe('done');
}

/** Saves `definition` and starts it on a crowd of users 1–3; the running instance's id. */
async function startInstance(tenant: Tenant, definition: unknown): Promise<{ workflowId: string; instanceId: string }> {
  const base = `/tenants/${tenant.name}`;
  await uploadCrowd(tenant, 'launch', [1, 2, 3]);
  const created = await api('POST', `${base}/workflows`, { body: { name: uniqueName('contract'), definition } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const started = await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'launch' } });
  await settled(started);
  return { workflowId: created.body.id, instanceId: started.body.instanceId };
}

const waitThenDone = (timeout?: string) => ({
  steps: [
    {
      name: 'wait',
      kind: 'branch',
      branches: [{ condition: 'event.type == "buy"', next: 'done' }],
      ...(timeout ? { timeout: { after: timeout, next: 'done' } } : {}),
    },
    { name: 'done', kind: 'direct' },
  ],
});

describe('Idempotency-Key', () => {
  it('refuses a key with a space (not visible ASCII) with the 400 of other bad keys, and appends nothing', async () => {
    const tenant = await createTenant(2);
    const post = (key: string) =>
      api('POST', '/events', { token: tenant.key, body: { events: [{ user: 1, type: 'click' }] }, headers: { 'idempotency-key': key } });
    const error = expectError(await post('batch 0001'), 400, 'validation_failed');
    expect(error.message).toBe('Idempotency-Key: expected 1 to 255 visible ASCII characters, got the string "batch 0001"');
    expect(error.details).toEqual({ path: 'Idempotency-Key' });
    expect(await serverSql('SELECT "offset" FROM "EventLog" WHERE "tenantId" = $1', [tenant.id])).toEqual([]);
    expect((await post('batch-0001~!')).status).toBe(202); // every visible character from 0x21 to 0x7E is fine
  });
});

describe('condition nesting at the documented limits', () => {
  // docs/limits.md "Input limits": 250 levels of parentheses (calls, literals, field accesses) and 1,000 levels of operators.
  const parens = (depth: number) => `${'('.repeat(depth)}user == 1${')'.repeat(depth)}`;
  const operators = (depth: number) => `${'!'.repeat(depth - 1)}(user == 1)`; // `==` is one level, each `!` one more
  const cases = [
    { name: '250 parentheses', condition: parens(250), accepted: true },
    { name: '251 parentheses', condition: parens(251), accepted: false, problem: /more than 250 levels deep/ },
    { name: '1,000 operators', condition: operators(1_000), accepted: true },
    { name: '1,001 operators', condition: operators(1_001), accepted: false, problem: /more than 1000 levels of operators/ },
  ];

  it.each(cases)('$name: save and audience agree with the documented limits', async ({ condition, accepted, problem }) => {
    const tenant = await createTenant(1);
    const definition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition, next: 'done' }] },
        { name: 'done', kind: 'direct' },
      ],
    };
    const saved = await api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: uniqueName('nesting'), definition } });
    const audience = await api('POST', `/tenants/${tenant.name}/audience`, { body: { condition } });
    if (accepted) {
      expect(saved.status, JSON.stringify(saved.body).slice(0, 300)).toBe(201);
      expect(audience.status, JSON.stringify(audience.body).slice(0, 300)).toBe(200);
      return;
    }
    const saveError = expectError(saved, 400, 'invalid_workflow');
    expect((saveError.details as { problems: { code: string; message: string }[] }).problems).toEqual([
      expect.objectContaining({ step: 'wait', code: 'bad_condition', message: expect.stringMatching(problem!) }),
    ]);
    expect(expectError(audience, 400, 'invalid_condition').details).toEqual(expect.objectContaining({ problem: expect.stringMatching(problem!) }));
  });
});

describe('durations and cron steps at save', () => {
  const save = (tenant: Tenant, definition: unknown, schedule?: unknown) =>
    api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: uniqueName('bounds'), definition, ...(schedule ? { schedule } : {}) } });

  it('refuses a duration longer than 366d with a 400 naming the step and field, and saves 366d', async () => {
    const tenant = await createTenant(2);
    expect((await save(tenant, waitThenDone('366d'))).status).toBe(201);
    const definition = {
      steps: [
        { name: 'hold', kind: 'delay', after: '999999999w', ttl: '9999999999999999999999d', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    };
    const error = expectError(await save(tenant, definition), 400, 'invalid_workflow');
    expect(error.details).toEqual({
      problems: [
        { step: 'hold', code: 'bad_duration', message: 'Step "hold" after "999999999w" is longer than 366d, the longest duration' },
        { step: 'hold', code: 'bad_duration', message: 'Step "hold" ttl "9999999999999999999999d" is longer than 366d, the longest duration' },
      ],
    });
    expect(expectError(await save(tenant, waitThenDone('367d')), 400, 'invalid_workflow').message).toMatch(/timeout\.after "367d" is longer than 366d/);
  });

  it('refuses a cron step larger than its field (timer steps and schedules), naming the step', async () => {
    const tenant = await createTenant(2);
    const timer = (cron: string) => ({
      steps: [
        { name: 'tick', kind: 'timer', cron, next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    const error = expectError(await save(tenant, timer('0-59/99999999 * * * * *')), 400, 'invalid_workflow');
    expect(error.details).toEqual({
      problems: [
        {
          step: 'tick',
          code: 'bad_cron',
          message:
            'Step "tick" cron "0-59/99999999 * * * * *": the step /99999999 in the second field is larger than the ' +
            "field's 60 values; a step can be at most 60",
        },
      ],
    });
    const schedule = expectError(await save(tenant, waitThenDone(), { cron: '0 0 */25 * * *', crowd: 'launch' }), 400, 'invalid_workflow');
    expect(schedule.details).toEqual({
      problems: [expect.objectContaining({ step: null, code: 'bad_cron', message: expect.stringMatching(/\/25 in the hour field/) })],
    });
    expect((await save(tenant, timer('0 */60 * * * *'))).status).toBe(201); // every 60 minutes: once an hour, as it says
  });
});

describe('unknown_crowd warnings', () => {
  it('warns of crowds named by the entry trigger and the entry and goal conditions, until they exist', async () => {
    const tenant = await createTenant(2);
    const definition = {
      ...waitThenDone(),
      entry: { event: 'signup', crowd: 'nosuch', condition: 'inCrowd("zzz")' },
      goal: { condition: 'event.type == "buy" && inCrowd("goalcrowd")' },
    };
    const created = await api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: uniqueName('warned'), definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const missing = `but tenant "${tenant.name}" has no crowd of that name`;
    expect(created.body.warnings).toEqual([
      {
        step: null,
        code: 'unknown_crowd',
        message: `Workflow entry.condition reads inCrowd("zzz"), ${missing}: it is false for every user until one is uploaded`,
      },
      { step: null, code: 'unknown_crowd', message: `Workflow entry.crowd names crowd "nosuch", ${missing}: no user enters by events until one is uploaded` },
      {
        step: null,
        code: 'unknown_crowd',
        message: `Workflow goal.condition reads inCrowd("goalcrowd"), ${missing}: it is false for every user until one is uploaded`,
      },
    ]);
    for (const crowd of ['nosuch', 'zzz', 'goalcrowd']) await uploadCrowd(tenant, crowd, [1]);
    expect((await api('GET', `/tenants/${tenant.name}/workflows/${created.body.id}`)).body.warnings).toEqual([]);
  });
});

describe('counts history and exports of what an instance does not have', () => {
  it('answers 404 for a counts history step the instance never had, and 200 for a step of an earlier version', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const { workflowId, instanceId } = await startInstance(tenant, waitThenDone());
    const history = (steps: string) => api('GET', `${base}/instances/${instanceId}/counts/history?step=${steps}`);
    expect(expectError(await history('nope'), 404, 'not_found').message).toBe(`Step "nope" of instance ${instanceId} was not found`);
    expect(expectError(await history('wait,nope'), 404, 'not_found').message).toBe(`Step "nope" of instance ${instanceId} was not found`);
    expect((await history('wait,done')).status).toBe(200);

    // Version 2 renames `done` (nobody is in it): its history stays readable by its name.
    const v2 = {
      steps: [
        { ...waitThenDone().steps[0], branches: [{ condition: 'true', next: 'finished' }] },
        { name: 'finished', kind: 'direct' },
      ],
    };
    expect((await api('PUT', `${base}/workflows/${workflowId}`, { body: { definition: v2 } })).body.version).toBe(2);
    await settled(await api('POST', `${base}/instances/${instanceId}/workflow`, { body: { version: 2 } }));
    expect((await history('done,finished')).status).toBe(200);
    expectError(await history('nope'), 404, 'not_found');
    await settled(await api('POST', `${base}/instances/${instanceId}/stop`));
  });

  it('answers 422 for an export of converted users when the workflow has no goal, running or stopped', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    const { instanceId } = await startInstance(tenant, waitThenDone());
    const exported = (step: string, users: string) => api('GET', `${base}/instances/${instanceId}/steps/${step}/export?format=json&users=${users}`);
    const noGoal = `Instance ${instanceId} has no goal (version 1 of its workflow defines none), so it has no converted users; export users=in instead`;
    for (const state of ['running', 'stopped']) {
      const error = expectError(await exported('wait', 'converted'), 422, 'unprocessable');
      expect({ state, message: error.message, details: error.details }).toEqual({ state, message: noGoal, details: { path: 'users' } });
      expectError(await exported('nope', 'converted'), 404, 'not_found'); // an unknown step is still a 404
      expect((await exported('wait', 'in')).body).toEqual([1, 2, 3]);
      if (state === 'running') await settled(await api('POST', `${base}/instances/${instanceId}/stop`));
    }
  });
});
