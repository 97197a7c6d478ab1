// Fenced procedure writes, the storage side of the runner's group commit (server/procedures/commits.ts): each write
// is fenced (its UPDATE matches only while its owner holds the procedure at the expected step; RETURNING tells which
// matched) and its step record is inserted only if the procedure is now in the state that UPDATE wrote, so a write
// that lost its lease changes nothing, whatever else commits in the same transaction. SQLite runs two prepared
// statements a write in one transaction; PostgreSQL, where each statement is a round trip, the whole batch in one.
import type { Database } from './database';
import type { Dialect } from './dialect';
import type { RawStatement } from './raw';

/** A procedure's new state; `data` and `output` are stored as their JSON. */
export interface ProcedureUpdate {
  state: string;
  data?: unknown;
  attempts?: number;
  output?: unknown;
  error?: object | null;
  nextRunMs?: number;
}

/** One fenced write: a state change, and with `nextStep` the step it commits; `finished`: the state is a final one. */
export interface ProcedureWrite {
  id: string;
  owner: string;
  step: number;
  update: ProcedureUpdate;
  now: number;
  nextStep: boolean;
  finished: boolean;
}

/** Commits the writes in one transaction; for each, whether its fence matched (false: its lease is lost). */
export async function commitProcedureWrites(database: Database, writes: ProcedureWrite[]): Promise<boolean[]> {
  const { dialect } = database;
  const db = await database.raw();
  if (dialect.roundTripPerStatement) {
    const { sql, params } = batchStatement(dialect, writes);
    const matched = new Set((await db.query<{ id: string }>(sql, params)).map((row) => row.id));
    return writes.map((write) => matched.has(write.id));
  }
  const statements = writes.map((write) => writeStatements(dialect, write));
  const results = await db.transaction(statements.flat());
  let at = 0;
  return statements.map((written) => {
    const matched = results[at].length > 0;
    at += written.length;
    return matched;
  });
}

/** The fenced UPDATE of a procedure row; with `nextStep` it also advances the step counter. */
function fencedUpdate(sql: Dialect, { id, owner, step, update, now, nextStep, finished }: ProcedureWrite): RawStatement {
  const { params, bind } = sql.parameters();
  const sets = [`"state" = ${bind(update.state)}`];
  if (update.data !== undefined) sets.push(`"data" = ${bind(JSON.stringify(update.data))}`);
  if (update.attempts !== undefined) sets.push(`"attempts" = ${bind(update.attempts)}`);
  if (update.output !== undefined) sets.push(`"output" = ${bind(JSON.stringify(update.output))}`);
  if (update.error !== undefined) sets.push(`"error" = ${bind(update.error === null ? null : JSON.stringify(update.error))}`);
  sets.push(`"nextRunMs" = ${bind(update.nextRunMs ?? 0)}`, `"updatedAt" = ${bind(sql.timestamp(now))}`);
  // A finished procedure holds no locks and no lease.
  if (finished) sets.push('"owner" = NULL', `"finishedAt" = ${bind(sql.timestamp(now))}`);
  if (nextStep) sets.push(`"step" = ${bind(step + 1)}`);
  const where = `"id" = ${bind(id)} AND "owner" = ${bind(owner)} AND "step" = ${bind(step)}`;
  return { sql: `UPDATE ${sql.table('Procedure')} SET ${sets.join(', ')} WHERE ${where} RETURNING "id"`, params, returning: true };
}

/** The step record of a fenced UPDATE that advanced to `step + 1`, inserted only if that UPDATE matched. */
function stepRecord(sql: Dialect, { id, owner, step, update, now, finished }: ProcedureWrite): RawStatement {
  const { params, bind } = sql.parameters();
  const ownerAfter = finished ? '' : owner;
  const values = [
    bind(id),
    sql.typed(bind(step + 1), 'int'),
    bind(update.state),
    bind(JSON.stringify(update.data ?? null)),
    sql.typed(bind(sql.timestamp(now)), 'timestamp'),
  ];
  const written = `SELECT 1 FROM ${sql.table('Procedure')} WHERE "id" = ${bind(id)} AND "step" = ${bind(step + 1)} AND COALESCE("owner", '') = ${bind(ownerAfter)}`;
  return {
    sql: `INSERT INTO ${sql.table('ProcedureStep')} ("procedureId", "step", "state", "data", "createdAt") SELECT ${values.join(', ')} WHERE EXISTS (${written})`,
    params,
  };
}

/** The write as statements that run in any transaction (the fenced UPDATE first). */
function writeStatements(sql: Dialect, write: ProcedureWrite): RawStatement[] {
  const update = fencedUpdate(sql, write);
  return write.nextStep ? [update, stepRecord(sql, write)] : [update];
}

/**
 * Where every statement is a network round trip, a whole batch of writes in ONE statement (atomic on its own, so no
 * BEGIN/COMMIT either): the rows arrive as one JSON parameter, the UPDATE matches each on its fence, and only the rows
 * it matched get their step record. Returns the ids it matched.
 */
function batchStatement(sql: Dialect, writes: ProcedureWrite[]): RawStatement {
  const rows = writes.map(({ id, owner, step, update, now, nextStep, finished }) => ({
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
    finished,
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
