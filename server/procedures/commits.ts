// The runner's step commits and state changes, written together: every write waiting when a transaction starts joins
// it (group commit), so N procedures stepping at once cost one transaction (one fsync on SQLite, one round trip per
// statement on PostgreSQL) instead of N, and each write is two prepared raw statements instead of a Prisma
// interactive transaction. Measured by `npm run bench -- --only=procedures` (BENCHMARKS.md).
//
// Each write is fenced like before: its UPDATE matches only while this owner holds the procedure at the expected step
// (RETURNING tells which matched), and its step record is inserted only if the procedure is now in the state that
// UPDATE wrote, so a write that lost its lease changes nothing, whatever else commits in the same transaction.
import type { Database } from '../storage/database';
import type { Dialect } from '../storage/dialect';
import type { RawStatement } from '../storage/raw';
import { FINISHED_STATES, type Json, type ProcedureState } from './types';

/** Writes per transaction at most: keeps one transaction (and the statement list) bounded under a burst. */
const MAX_WRITES_PER_TRANSACTION = 500;

export interface FencedUpdate {
  state: ProcedureState;
  data?: Json;
  attempts?: number;
  output?: Json;
  error?: object | null;
  nextRunMs?: number;
}

/** The fenced UPDATE of a procedure row; with `nextStep` it also advances the step counter. */
function fencedUpdate(sql: Dialect, id: string, owner: string, step: number, update: FencedUpdate, now: number, nextStep: boolean): RawStatement {
  const { params, bind } = sql.parameters();
  const sets = [`"state" = ${bind(update.state)}`];
  if (update.data !== undefined) sets.push(`"data" = ${bind(JSON.stringify(update.data))}`);
  if (update.attempts !== undefined) sets.push(`"attempts" = ${bind(update.attempts)}`);
  if (update.output !== undefined) sets.push(`"output" = ${bind(JSON.stringify(update.output))}`);
  if (update.error !== undefined) sets.push(`"error" = ${bind(update.error === null ? null : JSON.stringify(update.error))}`);
  sets.push(`"nextRunMs" = ${bind(update.nextRunMs ?? 0)}`, `"updatedAt" = ${bind(sql.timestamp(now))}`);
  // A finished procedure holds no locks and no lease.
  if (FINISHED_STATES.includes(update.state)) sets.push('"owner" = NULL', `"finishedAt" = ${bind(sql.timestamp(now))}`);
  if (nextStep) sets.push(`"step" = ${bind(step + 1)}`);
  const where = `"id" = ${bind(id)} AND "owner" = ${bind(owner)} AND "step" = ${bind(step)}`;
  return { sql: `UPDATE ${sql.table('Procedure')} SET ${sets.join(', ')} WHERE ${where} RETURNING "id"`, params, returning: true };
}

/** The step record of a fenced UPDATE that advanced to `step + 1`, inserted only if that UPDATE matched. */
function stepRecord(sql: Dialect, id: string, owner: string, step: number, state: ProcedureState, data: Json, now: number): RawStatement {
  const { params, bind } = sql.parameters();
  const ownerAfter = FINISHED_STATES.includes(state) ? '' : owner;
  const values = [bind(id), sql.typed(bind(step + 1), 'int'), bind(state), bind(JSON.stringify(data)), sql.typed(bind(sql.timestamp(now)), 'timestamp')];
  const written = `SELECT 1 FROM ${sql.table('Procedure')} WHERE "id" = ${bind(id)} AND "step" = ${bind(step + 1)} AND COALESCE("owner", '') = ${bind(ownerAfter)}`;
  return {
    sql: `INSERT INTO ${sql.table('ProcedureStep')} ("procedureId", "step", "state", "data", "createdAt") SELECT ${values.join(', ')} WHERE EXISTS (${written})`,
    params,
  };
}

/** One fenced write: a state change, and with `nextStep` the step it commits. */
export interface FencedWrite {
  id: string;
  owner: string;
  step: number;
  update: FencedUpdate;
  now: number;
  nextStep: boolean;
}

/** The write as statements that run in any transaction (the fenced UPDATE first). */
function writeStatements(sql: Dialect, write: FencedWrite): RawStatement[] {
  const update = fencedUpdate(sql, write.id, write.owner, write.step, write.update, write.now, write.nextStep);
  if (!write.nextStep) return [update];
  return [update, stepRecord(sql, write.id, write.owner, write.step, write.update.state, write.update.data ?? null, write.now)];
}

/**
 * Where every statement is a network round trip, a whole batch of writes in ONE statement (atomic on its own, so no
 * BEGIN/COMMIT either): the rows arrive as one JSON parameter, the UPDATE matches each on its fence, and only the rows
 * it matched get their step record. Returns the ids it matched.
 */
function batchStatement(sql: Dialect, writes: FencedWrite[]): RawStatement {
  const rows = writes.map(({ id, owner, step, update, now, nextStep }) => ({
    id,
    owner,
    step,
    nextStep,
    state: update.state,
    data: update.data === undefined ? null : JSON.stringify(update.data),
    attempts: update.attempts ?? null,
    setOutput: update.output !== undefined,
    output: update.output === undefined ? null : JSON.stringify(update.output),
    setError: update.error !== undefined,
    error: update.error === undefined || update.error === null ? null : JSON.stringify(update.error),
    nextRunMs: update.nextRunMs ?? 0,
    at: sql.timestamp(now),
    finished: FINISHED_STATES.includes(update.state),
  }));
  const columns =
    'id text, owner text, step int, "nextStep" boolean, state text, data text, attempts int, ' +
    '"setOutput" boolean, output text, "setError" boolean, error text, "nextRunMs" bigint, at timestamp(3), finished boolean';
  return {
    sql: `WITH i AS (SELECT * FROM json_to_recordset($1::json) AS i(${columns})),
      u AS (
        UPDATE ${sql.table('Procedure')} AS p SET
          "state" = i.state, "data" = COALESCE(i.data, p."data"), "attempts" = COALESCE(i.attempts, p."attempts"),
          "output" = CASE WHEN i."setOutput" THEN i.output ELSE p."output" END,
          "error" = CASE WHEN i."setError" THEN i.error ELSE p."error" END,
          "nextRunMs" = i."nextRunMs", "updatedAt" = i.at,
          "owner" = CASE WHEN i.finished THEN NULL ELSE p."owner" END,
          "finishedAt" = CASE WHEN i.finished THEN i.at ELSE p."finishedAt" END,
          "step" = CASE WHEN i."nextStep" THEN i.step + 1 ELSE p."step" END
        FROM i WHERE p."id" = i.id AND p."owner" = i.owner AND p."step" = i.step
        RETURNING p."id"),
      s AS (
        INSERT INTO ${sql.table('ProcedureStep')} ("procedureId", "step", "state", "data", "createdAt")
        SELECT i.id, i.step + 1, i.state, i.data, i.at FROM i JOIN u ON u."id" = i.id WHERE i."nextStep")
      SELECT "id" FROM u`,
    params: [JSON.stringify(rows)],
  };
}

interface PendingWrite {
  write: FencedWrite;
  resolve(matched: boolean): void;
  reject(error: unknown): void;
}

export class GroupCommitter {
  private readonly queue: PendingWrite[] = [];
  private draining = false;

  constructor(private readonly database: Database) {}

  /** Commits the write with the others waiting; resolves with whether its fence matched (false: the lease is lost). */
  write(write: FencedWrite): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      // Let the writes of this turn of the event loop join the first transaction.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.queue.length > 0) await this.commit(this.queue.splice(0, MAX_WRITES_PER_TRANSACTION));
    } finally {
      this.draining = false;
    }
  }

  private async commit(batch: PendingWrite[]): Promise<void> {
    try {
      const { dialect } = this.database;
      const db = await this.database.raw();
      if (dialect.roundTripPerStatement) {
        const { sql, params } = batchStatement(
          dialect,
          batch.map((pending) => pending.write),
        );
        const matched = new Set((await db.query<{ id: string }>(sql, params)).map((row) => row.id));
        for (const pending of batch) pending.resolve(matched.has(pending.write.id));
        return;
      }
      const statements = batch.map((pending) => writeStatements(dialect, pending.write));
      const results = await db.transaction(statements.flat());
      let at = 0;
      batch.forEach((pending, index) => {
        pending.resolve(results[at].length > 0);
        at += statements[index].length;
      });
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      // One bad write must not fail the others: commit each on its own to find it.
      for (const write of batch) await this.commit([write]);
    }
  }
}
