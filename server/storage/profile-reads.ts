// Reads of committed profile rows for the profile index (server/profiles/): a whole tenant's in pages, to rebuild its
// index, and some users' rows, to apply a write another cluster member committed. Attributes are their JSON.
import type { Database } from './database';

/** A profile as stored. */
export type ProfileRow = { user: number; attributes: string };

/**
 * Every profile of the tenant in user order, `pageSize` rows a read, each page handed to `visit`; the event loop is
 * free between pages.
 */
export async function eachProfilePage(database: Database, tenantId: string, pageSize: number, visit: (rows: ProfileRow[]) => void): Promise<void> {
  const { dialect } = database;
  const connection = await database.raw();
  const table = dialect.table('Profile');
  const analyze = dialect.refreshPlannerStatistics('Profile');
  if (analyze) await connection.execute(analyze, []);
  let after = -1;
  for (;;) {
    const { params, bind } = dialect.parameters();
    const rows = await connection.query<{ user: number | string; attributes: string }>(
      // Ordered by the table's column: ORDER BY "user" named the selected "user"::float8 alias, which no index serves,
      // so PostgreSQL sorted every remaining row for each page (a 10M-profile rebuild ran past 15 minutes).
      `SELECT ${dialect.numberColumn('user')}, "attributes" FROM ${table} WHERE "tenantId" = ${bind(tenantId)} AND "user" > ${bind(after)} ORDER BY ${table}."user" LIMIT ${pageSize}`,
      params,
    );
    if (rows.length === 0) return;
    visit(rows.map((row) => ({ user: Number(row.user), attributes: row.attributes })));
    after = Number(rows[rows.length - 1].user);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The attributes of those of `users` that have a profile, as committed. */
export async function profilesOf(database: Database, tenantId: string, users: number[]): Promise<Map<number, string>> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  const tenant = bind(tenantId); // bound in the order they appear: SQLite's parameters are positional
  const j = dialect.jsonArrayRows(bind(JSON.stringify(users.map((user) => [user]))));
  const rows = await (await database.raw()).query<{ user: number | string; attributes: string }>(
    `SELECT ${dialect.numberColumn('user')}, "attributes" FROM ${dialect.table('Profile')}
      WHERE "tenantId" = ${tenant} AND "user" IN (SELECT ${j.field(0, 'bigint')} FROM ${j.from})`,
    params,
  );
  return new Map(rows.map((row) => [Number(row.user), row.attributes]));
}
