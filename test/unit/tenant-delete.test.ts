import { afterEach, describe, expect, it } from 'vitest';
import { app } from '../../server/app';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { saveCrowd } from '../../server/crowd/store';
import { appendEvents } from '../../server/engine/ingest';
import { acquireLease } from '../../server/storage/journal/leases';
import { createConsumer } from '../../server/notifications/notifications';
import { db, database } from '../helpers/app-db';
import { createTenant, deleteTenant, type Tenant } from '../../server/tenants/tenants';
import { createWorkflow } from '../../server/workflows/workflows';
import { startHarness, type Harness } from '../fixtures/engine/harness';

// Deleting a tenant removes every row it owns through the schema's relations (onDelete: Cascade), and the running
// engine is told: its partition loops for the tenant end, and no lease row of the tenant is ever written again.

let counter = 0;
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function newTenant(partitions = 2): Promise<Tenant> {
  const view = await createTenant(database(), { name: `cascade-${process.pid}-${++counter}`, partitions });
  return { ...view, createdAt: new Date(view.createdAt) };
}

/** One or more rows in every table a tenant owns. */
async function fill(tenant: Tenant): Promise<void> {
  const id = tenant.id;
  await saveCrowd(database(), id, 'all', RoaringBitmap32.from([1, 2, 3]), 'create');
  await db().profile.create({ data: { tenantId: id, user: 1n, attributes: '{}' } });
  await db().profileIndexState.create({ data: { tenantId: id } });
  await db().profileIndexSnapshot.create({ data: { tenantId: id, seq: 0n, bytes: Buffer.from([0]) } });
  const workflow = await createWorkflow(database(), tenant, { name: 'journey', definition: { steps: [{ name: 'entry', kind: 'direct' }] } });
  const instanceId = `in_${id}`;
  await db().instance.create({
    data: { id: instanceId, tenantId: id, workflowId: workflow.id, version: 1, crowdName: 'all', state: 'stopped', userCount: 3n },
  });
  await db().instanceSnapshot.create({
    data: { instanceId, tenantId: id, counts: '{}', bitmaps: Buffer.from([1]), expiresAt: new Date(Date.now() + 86_400_000) },
  });
  await db().shardCheckpoint.create({ data: { tenantId: id, instanceId, partition: 0, journalSeq: 0n, data: Buffer.from([0]) } });
  await appendEvents(database(), app().state, id, [{ user: 1, type: 'visit', data: {}, time: 0 }]);
  await db().ingestRecord.create({ data: { tenantId: id, seq: 1n, accepted: 1, duplicates: 0, createdAtMs: 0n } });
  await db().partitionState.create({ data: { tenantId: id, partition: 0 } });
  await createConsumer(database(), id, 'reader', 'head');
  await db().deadLetter.create({
    data: { id: `dl_${id}`, tenantId: id, instanceId, step: 'entry', partition: 0, logOffset: 1n, eventIndex: 0, event: '{}', reason: 'test' },
  });
  await db().tenantLimits.create({ data: { tenantId: id, limits: '{}' } });
}

async function owned(tenantId: string): Promise<Record<string, number>> {
  const where = { tenantId };
  const workflows = await db().workflow.findMany({ where, select: { id: true } });
  const instances = await db().instance.findMany({ where, select: { id: true } });
  return {
    crowds: await db().crowd.count({ where }),
    profiles: await db().profile.count({ where }),
    profileIndex: await db().profileIndexState.count({ where }),
    profileIndexSnapshot: await db().profileIndexSnapshot.count({ where }),
    workflows: workflows.length,
    versions: await db().workflowVersion.count({ where: { workflowId: { in: workflows.map((w) => w.id) } } }),
    instances: instances.length,
    snapshots: await db().instanceSnapshot.count({ where }),
    checkpoints: await db().shardCheckpoint.count({ where: { instanceId: `in_${tenantId}` } }),
    eventLog: await db().eventLog.count({ where }),
    ingestRecords: await db().ingestRecord.count({ where }),
    partitionStates: await db().partitionState.count({ where }),
    consumers: await db().consumer.count({ where }),
    deadLetters: await db().deadLetter.count({ where }),
    limits: await db().tenantLimits.count({ where }),
  };
}

describe('deleting a tenant', () => {
  it("removes every row the tenant owns through the schema's relations, and no other tenant's", async () => {
    const doomed = await newTenant();
    const kept = await newTenant();
    await fill(doomed);
    await fill(kept);
    const before = await owned(doomed.id);
    expect(Object.entries(before).filter(([, count]) => count === 0)).toEqual([]);

    await deleteTenant(database(), doomed);
    expect(await db().tenant.count({ where: { id: doomed.id } })).toBe(0);
    expect(Object.entries(await owned(doomed.id)).filter(([, count]) => count > 0)).toEqual([]);
    expect(await owned(kept.id)).toEqual(before);
  });

  it('refuses, and keeps everything, while an instance is active', async () => {
    const tenant = await newTenant();
    await fill(tenant);
    await db().instance.update({ where: { id: `in_${tenant.id}` }, data: { state: 'running' } });
    const before = await owned(tenant.id);
    await expect(deleteTenant(database(), tenant)).rejects.toMatchObject({ code: 'conflict' });
    expect(await owned(tenant.id)).toEqual(before);
    // Not left running for the engine of a later test to load.
    await db().instance.update({ where: { id: `in_${tenant.id}` }, data: { state: 'stopped' } });
    await deleteTenant(database(), tenant);
  });

  it("ends the running engine's partition loops of the tenant, and its lease rows never come back", async () => {
    harness = await startHarness(3);
    const h = harness;
    await Promise.all((await h.engine.workers(h.tenantId)).map((worker) => worker.firstAttempt));
    const leases = await db().partitionState.findMany({ where: { tenantId: h.tenantId } });
    expect(leases.map((row) => row.owner)).toEqual([h.engine.owner, h.engine.owner, h.engine.owner]);

    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: h.tenantId } });
    await deleteTenant(database(), tenant);
    await expect.poll(() => h.engine.hasTenant(h.tenantId)).toBe(false);
    expect(await db().partitionState.count({ where: { tenantId: h.tenantId } })).toBe(0);
    // What a loop that was never told would do once its lease lapsed: take the partition again. The row would
    // belong to no tenant, so the database refuses it.
    await expect(acquireLease(database(), h.tenantId, 0, h.engine.owner, h.clock.now(), h.engine.leaseMs)).rejects.toThrow();
    expect(await db().partitionState.count({ where: { tenantId: h.tenantId } })).toBe(0);
  });
});
