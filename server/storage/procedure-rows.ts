// Procedure rows written as whole operations, each one transaction: a submit (with the caller's rows, when it gives
// some, so neither commits without the other), a fenced suspension that creates its children, and the removal of
// finished procedures with their step records. The runner's per-step writes go through procedure-writes.ts.
import type { Database } from './database';
import { outcomeOf, RolledBack } from './rollback';
import type { Tx } from './db';
import type { Prisma } from './generated/sqlite/client';

export type ProcedureRecord = Prisma.ProcedureCreateManyInput;

/** Inserts the procedure; with `together`, in one transaction after the caller's writes. A taken id throws the unique violation. */
export async function insertProcedure(database: Database, record: ProcedureRecord, together?: (tx: Tx) => Promise<void>): Promise<void> {
  if (!together) {
    await database.db.procedure.create({ data: record });
    return;
  }
  await database.db.$transaction(async (tx) => {
    await together(tx);
    await tx.procedure.create({ data: record });
  });
}

/**
 * Commits a suspension, fenced like every step write: the procedure's new fields and step counter, its step record,
 * and the children whose ids do not exist yet (a replayed suspension finds them). False, with nothing written, when
 * `owner` no longer holds the procedure at `step`.
 */
export async function commitSuspension(
  database: Database,
  fence: { id: string; owner: string; step: number },
  fields: Prisma.ProcedureUpdateManyMutationInput,
  stepRecord: { state: string; data: string; createdAt: Date },
  children: ProcedureRecord[],
): Promise<boolean> {
  const { id, owner, step } = fence;
  return outcomeOf(
    database.db.$transaction(async (tx) => {
      const result = await tx.procedure.updateMany({ where: { id, owner, step }, data: { ...fields, step: step + 1 } });
      if (result.count !== 1) throw new RolledBack(false);
      await tx.procedureStep.create({ data: { procedureId: id, step: step + 1, ...stepRecord } });
      const existing = new Set((await tx.procedure.findMany({ where: { id: { in: children.map((c) => c.id) } }, select: { id: true } })).map((r) => r.id));
      const fresh = children.filter((c) => !existing.has(c.id));
      if (fresh.length) await tx.procedure.createMany({ data: fresh });
      return true;
    }),
  );
}

/** Deletes these procedures and their step records. */
export async function deleteProcedures(database: Database, ids: string[]): Promise<void> {
  const { db } = database;
  await db.$transaction([db.procedureStep.deleteMany({ where: { procedureId: { in: ids } } }), db.procedure.deleteMany({ where: { id: { in: ids } } })]);
}
