// Profile writes that read the profiles they change (a merge patch, a delete: server/profiles/profiles.ts), in one
// interactive transaction. Two concurrent merges of the same user would each read the old profile and one would lose
// the other's attributes, so the tenant's writes through here take turns; each is counted (ProfileIndexState.seq), the
// count the tenant's profile index is labelled with. Reads and upserts are multi-row raw SQL: Prisma's createMany took
// ~0.8 s per 1,000 rows here, the raw upsert ~30 ms.
import type { Database } from './database';
import type { Tx } from './db';

/** Rows per statement: keeps IN lists and multi-row inserts under SQLite's bound-parameter limit. */
const ROWS_PER_STATEMENT = 1000;

/** The tenant's Profile rows within one locked write; attributes are their JSON. */
export interface LockedProfiles {
  /** The attributes of those of `users` that have a profile. */
  read(users: number[]): Promise<Map<number, string>>;
  /** Inserts or replaces the profiles ([user, attributes]), stamped `at`. */
  upsert(rows: Array<[number, string]>, at: Date): Promise<void>;
  delete(user: number): Promise<void>;
}

/** How long the write may wait to begin and run (Prisma's interactive transaction options; its defaults when absent). */
export type TransactionTimes = { maxWait: number; timeout: number };

/**
 * Runs `write` on the tenant's profiles in one transaction, after the tenant's other locked writes commit, and counts
 * the write; returns what `write` returned with the write's seq. A throw rolls the whole write back.
 */
export async function lockedProfileWrite<T extends object>(
  database: Database,
  tenantId: string,
  write: (profiles: LockedProfiles) => Promise<T>,
  times?: TransactionTimes,
): Promise<T & { seq: number }> {
  const { db, dialect } = database;
  return db.$transaction(async (tx) => {
    await dialect.lockUntilCommit(tx, `profiles:${tenantId}`);
    const table = dialect.table('Profile');
    const result = await write({
      read: async (users) => {
        const found = new Map<number, string>();
        for (const part of chunks(users)) {
          const { params, bind } = dialect.parameters();
          const sql = `SELECT "user", "attributes" FROM ${table} WHERE "tenantId" = ${bind(tenantId)} AND "user" IN (${part.map(bind).join(', ')})`;
          for (const row of await tx.$queryRawUnsafe<{ user: number | bigint; attributes: string }[]>(sql, ...params))
            found.set(Number(row.user), row.attributes);
        }
        return found;
      },
      upsert: async (rows, at) => {
        for (const part of chunks(rows)) {
          const { params, bind } = dialect.parameters();
          const values = part.map(([user, attributes]) => `(${bind(tenantId)}, ${bind(user)}, ${bind(attributes)}, ${bind(at)})`);
          await tx.$executeRawUnsafe(
            `INSERT INTO ${table} ("tenantId", "user", "attributes", "updatedAt") VALUES ${values.join(', ')} ` +
              `ON CONFLICT ("tenantId", "user") DO UPDATE SET "attributes" = excluded."attributes", "updatedAt" = excluded."updatedAt"`,
            ...params,
          );
        }
      },
      delete: async (user) => {
        await tx.profile.deleteMany({ where: { tenantId, user: BigInt(user) } });
      },
    });
    return { ...result, seq: await countProfileWrite(database, tx, tenantId) };
  }, times);
}

/** Counts the tenant's profile write, returning the new count. */
async function countProfileWrite({ dialect }: Database, tx: Tx, tenantId: string): Promise<number> {
  const { params, bind } = dialect.parameters();
  const table = dialect.table('ProfileIndexState');
  const rows = await tx.$queryRawUnsafe<{ seq: number | bigint | string }[]>(
    `INSERT INTO ${table} ("tenantId", "seq") VALUES (${bind(tenantId)}, 1) ON CONFLICT ("tenantId") DO UPDATE SET "seq" = ${table}."seq" + 1 RETURNING "seq"`,
    ...params,
  );
  return Number(rows[0].seq);
}

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += ROWS_PER_STATEMENT) out.push(items.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}
