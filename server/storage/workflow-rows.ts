// A workflow's rows as whole operations, each one transaction: creating it with its first version, saving a change
// (with a definition: the next version), and deleting it with its versions and stopped instances. The domain
// (server/workflows/workflows.ts, server/engine/experiments.ts) checks what is saved and turns outcomes into answers.
import type { Database } from './database';
import { outcomeOf, RolledBack } from './rollback';
import type { Tx } from './db';

/** Rows per IN list: well under SQLite's bound-parameter limit however many instances a workflow ran. */
const IDS_PER_STATEMENT = 1000;

export type NewWorkflowRow = { id: string; tenantId: string; name: string; draft: string; schedule: string | null; at: Date };

/** The Workflow row at version 1 with that version's definition (JSON). A taken name throws the unique violation. */
export async function insertWorkflow(database: Database, row: NewWorkflowRow, definition: string): Promise<void> {
  const { db } = database;
  await db.$transaction([
    db.workflow.create({
      data: {
        id: row.id,
        tenantId: row.tenantId,
        name: row.name,
        currentVersion: 1,
        draft: row.draft,
        schedule: row.schedule,
        createdAt: row.at,
        updatedAt: row.at,
      },
    }),
    db.workflowVersion.create({ data: { tenantId: row.tenantId, workflowId: row.id, version: 1, definition, createdAt: row.at } }),
  ]);
}

export type WorkflowRowChange = { name?: string; draft?: string; schedule?: string | null; updatedAt: Date };

/**
 * Changes the Workflow row; with a definition (JSON) it also writes the next version and returns its number. The
 * version increment is the row write that serializes concurrent saves: each gets its own number. A missing workflow
 * throws Prisma's record-missing error, a taken name the unique violation.
 */
export async function saveWorkflowRow(
  database: Database,
  tenantId: string,
  workflowId: string,
  change: WorkflowRowChange,
  definition?: string,
): Promise<number> {
  return database.db.$transaction(async (tx) => {
    if (definition === undefined) return (await tx.workflow.update({ where: { id: workflowId, tenantId }, data: change })).currentVersion;
    const updated = await tx.workflow.update({ where: { id: workflowId, tenantId }, data: { ...change, currentVersion: { increment: 1 } } });
    await tx.workflowVersion.create({ data: { tenantId, workflowId, version: updated.currentVersion, definition, createdAt: change.updatedAt } });
    return updated.currentVersion;
  });
}

export type WorkflowRowsDeleted = { kind: 'deleted' } | { kind: 'active'; instance: { id: string; state: string } };

/**
 * Deletes the workflow with its versions and its stopped instances (their history snapshots, shard checkpoints,
 * timer plans and crowd changes), unless it has an instance in `activeStates`. The workflow row is written first (a
 * row lock on PostgreSQL, the write lock on SQLite, so concurrent saves and deletes of it wait), so an instance that
 * became active after the caller looked is still seen and nothing is removed. A missing workflow throws Prisma's
 * record-missing error.
 */
export async function deleteWorkflowRows(
  database: Database,
  tenantId: string,
  workflowId: string,
  activeStates: readonly string[],
  at: Date,
): Promise<WorkflowRowsDeleted> {
  return outcomeOf(
    database.db.$transaction(
      async (tx): Promise<WorkflowRowsDeleted> => {
        await tx.workflow.update({ where: { id: workflowId, tenantId }, data: { updatedAt: at } });
        const active = await tx.instance.findFirst({ where: { tenantId, workflowId, state: { in: [...activeStates] } } });
        if (active) throw new RolledBack<WorkflowRowsDeleted>({ kind: 'active', instance: { id: active.id, state: active.state } });
        const stopped = await tx.instance.findMany({ where: { tenantId, workflowId }, select: { id: true } });
        await removeInstances(
          tx,
          tenantId,
          stopped.map((instance) => instance.id),
        );
        await tx.workflowVersion.deleteMany({ where: { tenantId, workflowId } });
        await tx.workflow.delete({ where: { id: workflowId, tenantId } });
        return { kind: 'deleted' };
      },
      { maxWait: 30_000, timeout: 120_000 },
    ),
  );
}

async function removeInstances(tx: Tx, tenantId: string, instanceIds: string[]): Promise<void> {
  for (let i = 0; i < instanceIds.length; i += IDS_PER_STATEMENT) {
    const ids = instanceIds.slice(i, i + IDS_PER_STATEMENT);
    await tx.shardCheckpoint.deleteMany({ where: { tenantId, instanceId: { in: ids } } });
    await tx.shardTimerPlan.deleteMany({ where: { tenantId, instanceId: { in: ids } } });
    await tx.crowdChange.deleteMany({ where: { tenantId, instanceId: { in: ids } } });
    await tx.instanceSnapshot.deleteMany({ where: { tenantId, instanceId: { in: ids } } });
    await tx.instance.deleteMany({ where: { tenantId, id: { in: ids } } });
  }
}
