import { describe, expect, it } from 'vitest';
import { deserializeBitmap } from '../../server/crowd/bitmap';
import { api, baseUrl, createTenant, expectError } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';
import { countsEvents } from '../helpers/counts-stream';

// Busybee's workflow: an event moves user 1 to end_1 and everyone else to else.
const busybee = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.type != "" && user == 1', next: 'end_1' },
        { condition: 'event.type != ""', next: 'else' },
      ],
      leaveAction: 'left-entry',
    },
    { name: 'end_1', kind: 'direct', enterAction: 'won' },
    { name: 'else', kind: 'direct' },
  ],
};

type Tenant = Awaited<ReturnType<typeof createTenant>>;

async function setUp(users: number[]): Promise<{ tenant: Tenant; workflowId: string }> {
  const tenant = await createTenant(4);
  const crowd = await api('PUT', `/tenants/${tenant.name}/crowds/launch`, { body: users.join('\n'), headers: { 'content-type': 'text/plain' } });
  expect(crowd.status, JSON.stringify(crowd.body)).toBeLessThan(300);
  const workflow = await api('POST', `/tenants/${tenant.name}/workflows`, { body: { name: 'busybee', definition: busybee } });
  expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
  return { tenant, workflowId: workflow.body.id };
}

async function waitForState(tenant: Tenant, instanceId: string, state: string): Promise<void> {
  const read = () => api('GET', `/tenants/${tenant.name}/instances/${instanceId}`);
  await waitFor(`the instance ${state}`, read, (view) => view.body.state === state);
}

describe('instances over HTTP', () => {
  it('starts, streams counts, moves users on events, exports, finds a user, notifies, stops and keeps a snapshot', async () => {
    const crowd = [1, 2, 3, 4, 5, 6, 7, 8];
    const { tenant, workflowId } = await setUp(crowd);
    const base = `/tenants/${tenant.name}`;
    const started = await api('POST', `${base}/workflows/${workflowId}/start`, { token: tenant.key, body: { crowd: 'launch' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toEqual({ procedureId: expect.any(String), instanceId: expect.any(String) });
    const instanceId: string = started.body.instanceId;
    await waitForState(tenant, instanceId, 'running');
    expect((await api('GET', `${base}/instances?state=running`, { token: tenant.key })).body.instances.map((i: { id: string }) => i.id)).toEqual([instanceId]);
    expect((await api('GET', `${base}/instances/${instanceId}/counts`)).body).toMatchObject({ instanceId, total: 8, steps: { entry: 8, end_1: 0, else: 0 } });

    const stream = await fetch(`${baseUrl()}/api/v1${base}/instances/${instanceId}/counts/stream`, { headers: { authorization: `Bearer ${tenant.key}` } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = countsEvents(stream);
    expect((await events.next(5_000))?.steps).toMatchObject({ entry: 8 });

    const sent = await api('POST', '/events', { token: tenant.key, body: { events: [1, 2, 3, 99].map((user) => ({ user, type: 'visit' })) } });
    expect(sent.body).toEqual({ accepted: 4 });
    let latest = await events.next(5_000);
    while (latest && latest.steps.entry !== 5) latest = await events.next(5_000);
    expect(latest?.steps).toEqual({ entry: 5, end_1: 1, else: 2 });
    await events.cancel();

    const counts = await api('GET', `${base}/instances/${instanceId}/counts`, { token: tenant.key });
    expect(counts.body).toMatchObject({ total: 8, steps: { entry: 5, end_1: 1, else: 2 } });
    expect(counts.body.edges).toMatchObject({ 'entry->end_1': 1, 'entry->else': 2 });

    const csv = await api('GET', `${base}/instances/${instanceId}/steps/entry/export?format=csv`, { token: tenant.key });
    expect(csv.status).toBe(200);
    expect((csv.body as string).trim().split('\n').map(Number)).toEqual([4, 5, 6, 7, 8]);
    const json = await api('GET', `${base}/instances/${instanceId}/steps/else/export?format=json`);
    expect(json.body).toEqual([2, 3]);
    const limited = await api('GET', `${base}/instances/${instanceId}/steps/entry/export?format=json&limit=2`);
    expect(limited.body).toEqual([4, 5]);
    const roaring = await fetch(`${baseUrl()}/api/v1${base}/instances/${instanceId}/steps/entry/export?format=roaring`, {
      headers: { authorization: `Bearer ${tenant.key}` },
    });
    expect(Array.from(deserializeBitmap(new Uint8Array(await roaring.arrayBuffer())).toUint32Array())).toEqual([4, 5, 6, 7, 8]);

    const where = await api('GET', `${base}/users/1`, { token: tenant.key });
    expect(where.status, JSON.stringify(where.body)).toBe(200);
    expect(where.body.user).toBe(1);
    expect(where.body.instances).toEqual([{ instanceId, workflowId, step: 'end_1' }]);
    expect(where.body.recentMoves).toContainEqual(expect.objectContaining({ instanceId, fromStep: 'entry', toStep: 'end_1' }));
    expect((await api('GET', `${base}/users/99`)).body.instances).toEqual([]);

    const notifications = await api('GET', '/notifications?limit=100', { token: tenant.key });
    const moves = notifications.body.items.filter((n: { instanceId: string }) => n.instanceId === instanceId);
    // The start enters the crowd as one bulk move per partition.
    const entered = moves.filter((n: { from: string | null }) => n.from === null);
    expect(entered.every((n: { to: string; users: number[]; count: number }) => n.to === 'entry' && n.users.length === n.count)).toBe(true);
    expect(entered.flatMap((n: { users: number[] }) => n.users).sort((a: number, b: number) => a - b)).toEqual(crowd);
    expect(moves).toContainEqual(expect.objectContaining({ from: 'entry', to: 'end_1', user: 1, leaveAction: 'left-entry', enterAction: 'won' }));

    const stopped = await api('POST', `${base}/instances/${instanceId}/stop`, { token: tenant.key });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(202);
    await waitForState(tenant, instanceId, 'stopped');
    const snapshot = await api('GET', `${base}/instances/${instanceId}/snapshot`, { token: tenant.key });
    expect(snapshot.status, JSON.stringify(snapshot.body)).toBe(200);
    expect(snapshot.body).toMatchObject({ instanceId, workflowId, counts: { steps: { entry: 5, end_1: 1, else: 2 } } });
    const exportPath: string = snapshot.body.exports.else;
    const history = await fetch(`${baseUrl()}${exportPath}`, { headers: { authorization: `Bearer ${tenant.key}` } });
    expect((await history.text()).trim().split('\n').map(Number)).toEqual([2, 3]);
    expect((await api('GET', `${base}/users/1`)).body.instances).toEqual([]);
  });

  it('updates the crowd and the workflow version of a running instance (busybee numbers, stranded users refused)', async () => {
    const { tenant, workflowId } = await setUp([2, 3, 4]);
    const base = `/tenants/${tenant.name}`;
    const settled = async (submitted: { status: number; body: { procedureId: string } }) => {
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
      const procedure = await api('GET', `/procedures/${encodeURIComponent(submitted.body.procedureId)}?wait=20`);
      expect(procedure.body.state, JSON.stringify(procedure.body)).toBe('done');
    };
    const countsOf = async (instanceId: string) => (await api('GET', `${base}/instances/${instanceId}/counts`)).body.steps;
    const waitForCounts = async (instanceId: string, steps: Record<string, number>) => {
      const counts = await waitFor(
        `counts ${JSON.stringify(steps)}`,
        () => countsOf(instanceId),
        (read) => JSON.stringify(read) === JSON.stringify(steps),
      );
      expect(counts).toEqual(steps);
    };
    const started = await api('POST', `${base}/workflows/${workflowId}/start`, { token: tenant.key, body: { crowd: 'launch' } });
    await settled(started);
    const instanceId: string = started.body.instanceId;
    await api('POST', '/events', { token: tenant.key, body: { events: [2, 3, 4].map((user) => ({ user, type: 'visit' })) } });
    await waitForCounts(instanceId, { entry: 0, end_1: 0, else: 3 });

    const next = await api('PUT', `${base}/crowds/next`, { body: '1\n2\n3\n5', headers: { 'content-type': 'text/plain' } });
    expect(next.status).toBeLessThan(300);
    await settled(await api('POST', `${base}/instances/${instanceId}/crowd`, { token: tenant.key, body: { crowd: 'next' } }));
    await api('POST', '/events', { token: tenant.key, body: { events: [{ user: 1, type: 'visit' }] } });
    await waitForCounts(instanceId, { entry: 1, end_1: 1, else: 2 });
    expect((await api('GET', `${base}/instances/${instanceId}/steps/entry/export?format=json`)).body).toEqual([5]);

    // Version 2 renames `else` to `other`: its two users must be mapped, or the update is refused with their count.
    const v2 = {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'event.type != "" && user == 1', next: 'end_1' },
            { condition: 'event.type != ""', next: 'other' },
          ],
        },
        { name: 'end_1', kind: 'direct' },
        { name: 'other', kind: 'direct' },
      ],
    };
    expect((await api('PUT', `${base}/workflows/${workflowId}`, { body: { definition: v2 } })).body.version).toBe(2);
    const refused = expectError(await api('POST', `${base}/instances/${instanceId}/workflow`, { token: tenant.key, body: { version: 2 } }), 409, 'conflict');
    expect(refused.details).toEqual({ stranded: { else: 2 } });
    await settled(await api('POST', `${base}/instances/${instanceId}/workflow`, { token: tenant.key, body: { version: 2, mapping: { else: 'other' } } }));
    await waitForCounts(instanceId, { entry: 1, end_1: 1, other: 2 });
    const listed = await api('GET', `${base}/instances?workflow=${workflowId}`, { token: tenant.key });
    expect(listed.body.instances).toEqual([expect.objectContaining({ id: instanceId, version: 2, state: 'running' })]);
    await settled(await api('POST', `${base}/instances/${instanceId}/stop`));
  });

  it('refuses bad instance calls with a 4xx naming the problem', async () => {
    const { tenant, workflowId } = await setUp([1, 2, 3]);
    const other = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expectError(await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'no-such-crowd' } }), 404, 'not_found');
    expect(expectError(await api('POST', `${base}/workflows/${workflowId}/start`, { body: {} }), 400, 'validation_failed').message).toMatch(/^crowd/);
    expect(
      expectError(await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'launch', version: 0 } }), 400, 'validation_failed').message,
    ).toMatch(/^version/);
    expectError(await api('POST', `${base}/workflows/wf_missing/start`, { body: { crowd: 'launch' } }), 404, 'not_found');
    expectError(await api('POST', `/tenants/${tenant.name}/workflows/${workflowId}/start`, { token: other.key, body: { crowd: 'launch' } }), 404, 'not_found');
    expectError(await api('GET', `${base}/instances/in_missing`), 404, 'not_found');
    expectError(await api('GET', `${base}/instances/in_missing/counts`), 404, 'not_found');
    expectError(await api('GET', `${base}/instances/in_missing/counts/stream`), 404, 'not_found');
    expectError(await api('POST', `${base}/instances/in_missing/stop`), 404, 'not_found');
    expect(expectError(await api('GET', `${base}/instances?state=sleeping`), 400, 'validation_failed').message).toMatch(/^state/);
    expect(expectError(await api('GET', `${base}/users/-4`), 400, 'validation_failed').message).toMatch(/^user/);
    expect(expectError(await api('GET', `${base}/users/4294967296`), 400, 'validation_failed').message).toMatch(/^user/);

    const started = await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'launch' } });
    await waitForState(tenant, started.body.instanceId, 'running');
    const instance = `${base}/instances/${started.body.instanceId}`;
    expectError(await api('POST', `${base}/workflows/${workflowId}/start`, { body: { crowd: 'launch' } }), 409, 'conflict');
    expect(expectError(await api('GET', `${instance}/steps/entry/export?format=xml`), 400, 'validation_failed').message).toMatch(/^format/);
    expectError(await api('GET', `${instance}/steps/nowhere/export`), 404, 'not_found');
    expect(expectError(await api('POST', `${instance}/crowd`, { body: { crowd: '' } }), 400, 'validation_failed').message).toMatch(/^crowd/);
    expect(expectError(await api('POST', `${instance}/workflow`, { body: { version: 'two' } }), 400, 'validation_failed').message).toMatch(/^version/);
    expectError(await api('GET', `${instance}/counts`, { token: other.key }), 404, 'not_found');
    expectError(await api('GET', `/tenants/${other.name}/instances/${started.body.instanceId}`, { token: other.key }), 404, 'not_found');
    await api('POST', `${instance}/stop`);
    await waitForState(tenant, started.body.instanceId, 'stopped');
  });
});
