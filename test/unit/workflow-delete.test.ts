import { describe, expect, it } from 'vitest';
import { db, database } from '../helpers/app-db';
import { createTenant, deleteTenant, type Tenant } from '../../server/tenants/tenants';
import { createWorkflow, deleteWorkflow, getWorkflow } from '../../server/workflows/workflows';
import { waitFor } from '../helpers/wait-for';

// Deleting a workflow removes what it left behind (versions, stopped instances, their snapshots and checkpoints)
// in one transaction that re-checks for an active instance inside it.

const definition = {
  steps: [
    { name: 'entry', kind: 'direct', next: 'done' },
    { name: 'done', kind: 'direct' },
  ],
};
let counter = 0;
const onPostgres = process.env.CROWDFLOW_TEST_PROVIDER === 'postgres';

async function setUp(): Promise<{ tenant: Tenant; workflowId: string }> {
  const view = await createTenant(database(), { name: `del-${process.pid}-${++counter}`, partitions: 2 });
  const tenant = { ...view, createdAt: new Date(view.createdAt) };
  const workflow = await createWorkflow(database(), tenant, { name: 'journey', definition });
  return { tenant, workflowId: workflow.id };
}

/** An instance row as the engine writes it, with a snapshot and a checkpoint per partition. */
async function recordInstance(tenant: Tenant, workflowId: string, id: string, state: string): Promise<void> {
  await db().instance.create({ data: { id, tenantId: tenant.id, workflowId, version: 1, crowdName: 'all', state, userCount: 3n } });
  await db().instanceSnapshot.create({
    data: { instanceId: id, tenantId: tenant.id, counts: '{}', bitmaps: Buffer.from([1, 2, 3]), expiresAt: new Date(Date.now() + 86_400_000) },
  });
  for (const partition of [0, 1]) {
    await db().shardCheckpoint.create({ data: { tenantId: tenant.id, instanceId: id, partition, journalSeq: 0n, data: Buffer.from([partition]) } });
  }
}

async function leftovers(instanceIds: string[]) {
  const where = { instanceId: { in: instanceIds } };
  return {
    instances: await db().instance.count({ where: { id: { in: instanceIds } } }),
    snapshots: await db().instanceSnapshot.count({ where }),
    checkpoints: await db().shardCheckpoint.count({ where }),
  };
}

describe('workflow delete', () => {
  it("removes the workflow, its versions, its stopped instances and their snapshots and checkpoints, and nothing of another workflow's", async () => {
    const { tenant, workflowId } = await setUp();
    await createWorkflow(database(), tenant, { name: 'other', definition });
    const other = (await db().workflow.findFirst({ where: { tenantId: tenant.id, name: 'other' } }))!.id;
    await recordInstance(tenant, workflowId, 'in_del_a', 'stopped');
    await recordInstance(tenant, workflowId, 'in_del_b', 'failed');
    await recordInstance(tenant, other, 'in_del_other', 'stopped');

    await deleteWorkflow(database(), tenant, workflowId, Date.now());

    await expect(getWorkflow(database(), tenant, workflowId)).rejects.toMatchObject({ code: 'not_found' });
    expect(await db().workflowVersion.count({ where: { workflowId } })).toBe(0);
    expect(await leftovers(['in_del_a', 'in_del_b'])).toEqual({ instances: 0, snapshots: 0, checkpoints: 0 });
    expect(await leftovers(['in_del_other'])).toEqual({ instances: 1, snapshots: 1, checkpoints: 2 });
    expect(await db().workflowVersion.count({ where: { workflowId: other } })).toBe(1);
  });

  it('refuses while an instance is active and removes nothing', async () => {
    const { tenant, workflowId } = await setUp();
    await recordInstance(tenant, workflowId, 'in_del_old', 'stopped');
    await recordInstance(tenant, workflowId, 'in_del_live', 'running');
    const before = await getWorkflow(database(), tenant, workflowId);
    await expect(deleteWorkflow(database(), tenant, workflowId, Date.now() + 60_000)).rejects.toMatchObject({
      code: 'conflict',
      details: { instanceId: 'in_del_live', state: 'running' },
    });
    // Not even the row lock's write stays: the workflow is as it was.
    expect((await getWorkflow(database(), tenant, workflowId)).updatedAt).toBe(before.updatedAt);
    expect(await leftovers(['in_del_old', 'in_del_live'])).toEqual({ instances: 2, snapshots: 2, checkpoints: 4 });
  });

  it('sees an instance that became active while the delete waited for the workflow row', async () => {
    const { tenant, workflowId } = await setUp();
    // Another transaction holds the workflow row and makes an instance active, uncommitted for now.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    let holderPid = 0;
    const holder = db().$transaction(
      async (tx) => {
        if (onPostgres) [{ pid: holderPid }] = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
        await tx.workflow.update({ where: { id: workflowId }, data: { updatedAt: new Date() } });
        await tx.instance.create({
          data: { id: 'in_del_racing', tenantId: tenant.id, workflowId, version: 1, crowdName: 'all', state: 'starting', userCount: 0n },
        });
        holding();
        await released;
      },
      { timeout: 30_000 },
    );
    await held;
    const deleting = deleteWorkflow(database(), tenant, workflowId, Date.now()).then(
      () => null,
      (error: unknown) => error,
    );
    // A check made before the transaction (or before its lock) would see no instance yet. On PostgreSQL the delete
    // now waits on the holder's row lock; on SQLite every statement of the app's one connection, its first read too,
    // waits for the holder's turn to end (server/storage/sqlite-busy.ts).
    if (onPostgres) {
      await waitFor('the delete to wait on the workflow row', async () => {
        const [{ waiting }] = await db().$queryRaw<{ waiting: bigint }[]>`
          SELECT count(*) AS waiting FROM pg_stat_activity WHERE ${holderPid}::int = ANY(pg_blocking_pids(pid))`;
        return waiting > 0n;
      });
    }
    release();
    await holder;
    expect(await deleting).toMatchObject({ code: 'conflict', details: { instanceId: 'in_del_racing', state: 'starting' } });
    expect((await getWorkflow(database(), tenant, workflowId)).id).toBe(workflowId);
  });

  it('answers 404 for a workflow deleted by a concurrent request', async () => {
    const { tenant, workflowId } = await setUp();
    const results = await Promise.allSettled([
      deleteWorkflow(database(), tenant, workflowId, Date.now()),
      deleteWorkflow(database(), tenant, workflowId, Date.now()),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: 'not_found' } });
  });

  it('deletes a tenant with its stopped instances in one transaction, refusing while one is active', async () => {
    const { tenant, workflowId } = await setUp();
    await recordInstance(tenant, workflowId, 'in_tn_old', 'stopped');
    await recordInstance(tenant, workflowId, 'in_tn_live', 'stopping');
    await expect(deleteTenant(database(), tenant)).rejects.toMatchObject({ code: 'conflict' });
    expect(await db().tenant.count({ where: { id: tenant.id } })).toBe(1);
    expect(await leftovers(['in_tn_old', 'in_tn_live'])).toEqual({ instances: 2, snapshots: 2, checkpoints: 4 });

    await db().instance.update({ where: { id: 'in_tn_live' }, data: { state: 'stopped' } });
    await deleteTenant(database(), tenant);
    expect(await db().tenant.count({ where: { id: tenant.id } })).toBe(0);
    expect(await db().workflow.count({ where: { tenantId: tenant.id } })).toBe(0);
    expect(await leftovers(['in_tn_old', 'in_tn_live'])).toEqual({ instances: 0, snapshots: 0, checkpoints: 0 });
  });
});
