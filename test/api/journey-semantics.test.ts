import { describe, expect, it } from 'vitest';
import { api, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

// Journey semantics an integrator relies on (issue 15 §3), over real HTTP: one-branch steps and self-moves, the
// re-entry option, where-is-user for every kind of move, unknown-crowd warnings, salted splits, ids or names.

type Tenant = Awaited<ReturnType<typeof createTenant>>;
type Move = { seq: number; instanceId: string; from: string | null; to: string; user?: number; users?: number[]; count: number };

async function uploadCrowd(tenant: Tenant, name: string, users: number[]): Promise<void> {
  const uploaded = await api('PUT', `/tenants/${tenant.name}/crowds/${name}`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } });
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBeLessThan(300);
}

async function saveWorkflow(
  tenant: Tenant,
  name: string,
  definition: unknown,
): Promise<{ id: string; warnings: { step: string | null; code: string; message: string }[] }> {
  const saved = await api('POST', `/tenants/${tenant.name}/workflows`, { body: { name, definition } });
  expect(saved.status, JSON.stringify(saved.body)).toBe(201);
  return saved.body;
}

/** Submits an instance operation and waits (server-side long poll) for its procedure to finish. */
async function settled(submitted: { status: number; body: { procedureId: string; instanceId: string } }): Promise<string> {
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
  const procedure = await api('GET', `/procedures/${encodeURIComponent(submitted.body.procedureId)}?wait=20`);
  expect(procedure.body.state, JSON.stringify(procedure.body)).toBe('done');
  return submitted.body.instanceId;
}

const start = (tenant: Tenant, workflow: string, body: Record<string, unknown>) =>
  api('POST', `/tenants/${tenant.name}/workflows/${encodeURIComponent(workflow)}/start`, { body });

async function movesOf(tenant: Tenant, instanceId: string): Promise<Move[]> {
  const page = await api('GET', '/notifications?limit=1000', { token: tenant.key });
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return (page.body.items as Move[]).filter((move) => move.instanceId === instanceId);
}

/** Reads the journal until `done` holds for the instance's moves (the engine applies events after their 202). */
function movesWhen(tenant: Tenant, instanceId: string, done: (moves: Move[]) => boolean): Promise<Move[]> {
  return waitFor('the moves of the instance', () => movesOf(tenant, instanceId), done);
}

const sendEvents = async (tenant: Tenant, events: { user: number; type: string }[]) =>
  expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);

describe('journey semantics over HTTP', () => {
  it('a branch with one condition leaves non-matching users in place, and a "stay" branch journals and counts nothing', async () => {
    const tenant = await createTenant(1); // one partition: events apply in the order sent
    await uploadCrowd(tenant, 'c', [1, 2, 3]);
    const single = await saveWorkflow(tenant, 'single', {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'bought' }] },
        { name: 'bought', kind: 'direct' },
      ],
    });
    const stay = await saveWorkflow(tenant, 'stay', {
      steps: [
        {
          name: 'wait',
          kind: 'branch',
          branches: [
            { condition: 'event.type == "buy"', next: 'bought' },
            { condition: 'true', next: 'wait' },
          ],
        },
        { name: 'bought', kind: 'direct' },
      ],
    });
    const singleId = await settled(await start(tenant, single.id, { crowd: 'c' }));
    const stayId = await settled(await start(tenant, stay.id, { crowd: 'c' }));
    await sendEvents(tenant, [
      { user: 1, type: 'view' },
      { user: 2, type: 'view' },
      { user: 3, type: 'buy' },
    ]);
    for (const instanceId of [singleId, stayId]) {
      const moves = await movesWhen(tenant, instanceId, (found) => found.some((m) => m.user === 3));
      expect(moves.filter((m) => m.from !== null)).toEqual([expect.objectContaining({ from: 'wait', to: 'bought', user: 3 })]);
      // The journal shows a move once committed; the counts once the engine published that commit, a message later.
      const counts = await waitFor(
        'the move in the counts',
        () => api('GET', `/tenants/${tenant.name}/instances/${instanceId}/counts`),
        (read) => read.body.steps?.bought === 1,
      );
      expect(counts.body).toMatchObject({ steps: { wait: 2, bought: 1 }, edges: { 'wait->bought': 1 } });
      expect(counts.body.edges['wait->wait']).toBeUndefined();
    }
  });

  it('re-entry: excluded by default, refused at once when nobody is left, allowed on request', async () => {
    const tenant = await createTenant(2);
    await uploadCrowd(tenant, 'first', [1, 2, 3]);
    await uploadCrowd(tenant, 'more', [1, 2, 3, 4, 5]);
    const workflow = await saveWorkflow(tenant, 'again', { steps: [{ name: 'wait', kind: 'branch', branches: [{ condition: 'false', next: 'wait' }] }] });
    const base = `/tenants/${tenant.name}`;
    const first = await settled(await start(tenant, workflow.id, { crowd: 'first' }));
    expect((await api('GET', `${base}/instances/${first}`)).body).toMatchObject({ reentry: 'exclude', userCount: 3, excludedCount: 0 });
    await settled(await api('POST', `${base}/instances/${first}/stop`));

    const refused = expectError(await start(tenant, workflow.id, { crowd: 'first' }), 422, 'unprocessable');
    expect(refused.details).toEqual({ crowd: 'first', excludedCount: 3, reentry: 'exclude' });
    expect(refused.message).toMatch(/all 3 were in the previous instance.*reentry "allow"/);
    // Refused before anything was created: the stopped instance is still the only one.
    expect((await api('GET', `${base}/instances`)).body.instances.map((i: { id: string }) => i.id)).toEqual([first]);

    const partly = await settled(await start(tenant, workflow.id, { crowd: 'more' }));
    expect((await api('GET', `${base}/instances/${partly}`)).body).toMatchObject({ reentry: 'exclude', userCount: 2, excludedCount: 3 });
    await settled(await api('POST', `${base}/instances/${partly}/stop`));

    const allowed = await settled(await start(tenant, workflow.id, { crowd: 'more', reentry: 'allow' }));
    expect((await api('GET', `${base}/instances/${allowed}`)).body).toMatchObject({ reentry: 'allow', userCount: 5, excludedCount: 0 });
    await settled(await api('POST', `${base}/instances/${allowed}/stop`));
    expect(expectError(await start(tenant, workflow.id, { crowd: 'more', reentry: 'sometimes' }), 400, 'validation_failed').message).toMatch(/^reentry/);
  });

  it('where-is-user lists the entry at start and bulk moves, not only moves of its own events', async () => {
    const tenant = await createTenant(4);
    await uploadCrowd(tenant, 'c', [5]);
    const workflow = await saveWorkflow(tenant, 'where', {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "go"', next: 'old' }] },
        { name: 'old', kind: 'branch', branches: [{ condition: 'false', next: 'wait' }] },
      ],
    });
    const base = `/tenants/${tenant.name}`;
    const instanceId = await settled(await start(tenant, workflow.id, { crowd: 'c' }));
    await sendEvents(tenant, [{ user: 5, type: 'go' }]);
    await movesWhen(tenant, instanceId, (found) => found.some((m) => m.user === 5));
    // Version 2 drops `old`; its user is mapped to `new` (a bulk move of the version update).
    const v2 = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "go"', next: 'new' }] },
        { name: 'new', kind: 'branch', branches: [{ condition: 'false', next: 'wait' }] },
      ],
    };
    expect((await api('PUT', `${base}/workflows/${workflow.id}`, { body: { definition: v2 } })).status).toBe(200);
    await settled(await api('POST', `${base}/instances/${instanceId}/workflow`, { body: { version: 2, mapping: { old: 'new' } } }));

    const where = await api('GET', `${base}/users/5`, { token: tenant.key });
    expect(where.status, JSON.stringify(where.body)).toBe(200);
    expect(where.body.instances).toEqual([{ instanceId, workflowId: workflow.id, step: 'new' }]);
    expect(where.body.recentMoves.map((m: { fromStep: string | null; toStep: string }) => `${m.fromStep}->${m.toStep}`)).toEqual([
      'old->new',
      'wait->old',
      'null->wait',
    ]);
    const seqs = where.body.recentMoves.map((m: { seq: number }) => m.seq);
    expect(seqs).toEqual([...seqs].sort((a: number, b: number) => b - a));
    // A user of the same partition who was never in the crowd has no moves.
    expect((await api('GET', `${base}/users/9`)).body).toEqual({ user: 9, instances: [], recentMoves: [], recentMovesComplete: true });
    await settled(await api('POST', `${base}/instances/${instanceId}/stop`));
  });

  it('inCrowd of a crowd the tenant does not have is saved with a warning naming the step', async () => {
    const tenant = await createTenant(2);
    const definition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'inCrowd("vip") || inCrowd("no-such-crowd")', next: 'done' }] },
        { name: 'done', kind: 'direct' },
      ],
    };
    await uploadCrowd(tenant, 'vip', [1]);
    const saved = await saveWorkflow(tenant, 'warned', definition);
    expect(saved.warnings).toEqual([
      {
        step: 'wait',
        code: 'unknown_crowd',
        message: `Step "wait" branches[0].condition reads inCrowd("no-such-crowd"), but tenant "${tenant.name}" has no crowd of that name: it is false for every user until one is uploaded`,
      },
    ]);
    await uploadCrowd(tenant, 'no-such-crowd', [2]);
    expect((await api('GET', `/tenants/${tenant.name}/workflows/warned`)).body.warnings).toEqual([]);
  });

  it('splits are salted per workflow, the same across its versions, and correlated by an explicit seed', async () => {
    const tenant = await createTenant(2);
    const users = Array.from({ length: 400 }, (_, i) => i + 1);
    await uploadCrowd(tenant, 'all', users);
    const split = (seed?: string) => ({
      steps: [
        {
          name: 'ab',
          kind: 'split',
          ...(seed ? { seed } : {}),
          paths: [
            { percent: 50, next: 'a' },
            { percent: 50, next: 'b' },
          ],
        },
        // Steps to rest in: branches that wait for an event (a loop of branches reading no event is refused at save)
        { name: 'a', kind: 'branch', branches: [{ condition: 'event.type == "never"', next: 'b' }] },
        { name: 'b', kind: 'branch', branches: [{ condition: 'event.type == "never"', next: 'a' }] },
      ],
    });
    const base = `/tenants/${tenant.name}`;
    /** Runs the workflow once over every user and returns who took path `a`. */
    const armA = async (workflowId: string): Promise<number[]> => {
      const instanceId = await settled(await start(tenant, workflowId, { crowd: 'all', reentry: 'allow' }));
      const exported = await api('GET', `${base}/instances/${instanceId}/steps/a/export?format=json`);
      await settled(await api('POST', `${base}/instances/${instanceId}/stop`));
      return exported.body;
    };
    const one = await saveWorkflow(tenant, 'one', split());
    const two = await saveWorkflow(tenant, 'two', split());
    const armOne = await armA(one.id);
    expect(armOne.length).toBeGreaterThan(150);
    expect(armOne.length).toBeLessThan(250);
    expect(await armA(two.id)).not.toEqual(armOne);
    // A new version of the same workflow assigns every user as before.
    expect((await api('PUT', `${base}/workflows/${one.id}`, { body: { definition: split() } })).body.version).toBe(2);
    expect(await armA(one.id)).toEqual(armOne);
    const seeded = [await saveWorkflow(tenant, 'seeded-1', split('exp-7')), await saveWorkflow(tenant, 'seeded-2', split('exp-7'))];
    expect(await armA(seeded[1].id)).toEqual(await armA(seeded[0].id));
  });

  it('workflow paths take the id or the name, for start and the instances filter alike', async () => {
    const tenant = await createTenant(2);
    await uploadCrowd(tenant, 'c', [1, 2]);
    const workflow = await saveWorkflow(tenant, 'By name', { steps: [{ name: 'wait', kind: 'branch', branches: [{ condition: 'false', next: 'wait' }] }] });
    const instanceId = await settled(await start(tenant, 'By name', { crowd: 'c' }));
    const byName = await api('GET', `/tenants/${tenant.name}/instances?workflow=${encodeURIComponent('By name')}`);
    expect(byName.body.instances).toEqual([expect.objectContaining({ id: instanceId, workflowId: workflow.id })]);
    expect((await api('GET', `/tenants/${tenant.name}/instances?workflow=${workflow.id}`)).body.instances).toHaveLength(1);
    expectError(await api('GET', `/tenants/${tenant.name}/instances?workflow=nope`), 404, 'not_found');
    expectError(await start(tenant, 'nope', { crowd: 'c' }), 404, 'not_found');
    await settled(await api('POST', `/tenants/${tenant.name}/instances/${instanceId}/stop`));
  });
});
