import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newId } from '../../server/ids';
import { database } from '../../server/storage/database';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { db } from '../../server/storage/db';
import { PrismaClient as PostgresClient } from '../../server/storage/generated/postgres/client';
import { PrismaClient as SqliteClient } from '../../server/storage/generated/sqlite/client';
import { describeStorageError, isTransientStorageError } from '../../server/storage/transient';
import { driverError, FAULT_KINDS, faultyDatabase, prismaError, type FaultKind } from '../fixtures/faulty-database';
import { PG_BASE_URL } from '../helpers/test-database';

// The fault-injecting Database (test/fixtures/faulty-database.ts): its errors have the shape of real ones provoked
// here, every kind is transient, a failed operation wrote nothing, and a seed gives the same faults.

const provider = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') as 'sqlite' | 'postgres';
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function caught(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

/** What code may look at in an error, with the database's own wording left out (a role name, a table). */
function shape(error: unknown): Record<string, unknown> {
  const e = error as { name: string; code?: unknown; meta?: { modelName?: unknown; driverAdapterError?: { name: string; cause: Record<string, unknown> } } };
  const adapter = e.meta?.driverAdapterError;
  return {
    class: Object.getPrototypeOf(error).constructor.name,
    name: e.name,
    code: e.code,
    severity: (error as { severity?: unknown }).severity,
    modelName: e.meta?.modelName,
    adapter: adapter && { name: adapter.name, keys: Object.keys(adapter.cause).sort(), kind: adapter.cause.kind, originalCode: adapter.cause.originalCode },
    transient: isTransientStorageError(error),
    // Prisma's text up to the database's own words, which differ (a role's limit here, the server's there).
    prismaText: e.name.startsWith('PrismaClient')
      ? (error as Error).message
          .split('\n')
          .at(-1)
          ?.replace(/`[^`]*`\.?$|: .*$/, '…')
      : undefined,
  };
}

describe.runIf(provider === 'postgres')('PostgreSQL faults', () => {
  it('are shaped as real ones: too many connections (53300) and a serialization failure (40001), from Prisma and from pg', async () => {
    const admin = new pg.Client({ connectionString: PG_BASE_URL });
    await admin.connect();
    cleanups.push(() => admin.end());
    const role = `cf_faulty_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
    cleanups.push(() => admin.query(`DROP ROLE IF EXISTS ${role}`));
    const refused = new PostgresClient({ adapter: new PrismaPg({ connectionString: PG_BASE_URL.replace('postgres@', `${role}@`), max: 1 }) });
    cleanups.push(() => refused.$disconnect());
    expect(shape(prismaError('too-many-clients', 'Procedure', 'findUnique'))).toEqual(
      shape(await caught(() => refused.procedure.findUnique({ where: { id: 'x' } }))),
    );
    expect(shape(prismaError('too-many-clients', undefined, '$queryRawUnsafe'))).toEqual(shape(await caught(() => refused.$queryRawUnsafe('SELECT 1'))));
    const realDriver = await caught(() => new pg.Client({ connectionString: PG_BASE_URL.replace('postgres@', `${role}@`) }).connect());
    expect(shape(driverError('too-many-clients'))).toEqual(shape(realDriver));

    const table = `faulty_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    await admin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int); INSERT INTO ${table} VALUES (1, 0)`);
    cleanups.push(() => admin.query(`DROP TABLE IF EXISTS ${table}`));
    const client = new PostgresClient({ adapter: new PrismaPg({ connectionString: PG_BASE_URL, max: 2 }) });
    cleanups.push(() => client.$disconnect());
    const conflict = await caught(() =>
      client.$transaction(
        async (tx) => {
          await tx.$queryRawUnsafe(`SELECT v FROM ${table} WHERE id = 1`);
          await admin.query(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
          await tx.$executeRawUnsafe(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
        },
        { isolationLevel: 'RepeatableRead' },
      ),
    );
    const injected = prismaError('serialization-failure', undefined, '$executeRawUnsafe');
    expect(shape(injected)).toEqual(shape(conflict));
    expect(describeStorageError(injected)).toBe(describeStorageError(conflict));
  });
});

describe.runIf(provider === 'sqlite')('SQLite faults', () => {
  it('are shaped as real ones: SQLITE_BUSY from the driver, from a Prisma model operation and from a raw query', async () => {
    const target = parseDatabaseUrl(process.env.DATABASE_URL!);
    if (target.provider !== 'sqlite') throw new Error('not SQLite');
    const holder = new BetterSqlite3(target.file);
    const impatientRaw = new BetterSqlite3(target.file, { timeout: 0 });
    const impatient = new SqliteClient({ adapter: new PrismaBetterSqlite3({ url: `file:${target.file}`, timeout: 0 }) });
    cleanups.push(async () => (holder.close(), impatientRaw.close(), await impatient.$disconnect()));
    holder.exec('BEGIN IMMEDIATE');
    try {
      expect(shape(driverError('sqlite-busy'))).toEqual(shape(await caught(() => impatientRaw.exec('DELETE FROM "Procedure" WHERE 0'))));
      const model = await caught(() => impatient.procedure.updateMany({ where: { id: 'x' }, data: { attempts: 1 } }));
      expect(shape(prismaError('sqlite-busy', 'Procedure', 'updateMany'))).toEqual(shape(model));
      expect(describeStorageError(prismaError('sqlite-busy', 'Procedure', 'updateMany'))).toBe(describeStorageError(model));
      const rawQuery = await caught(() => impatient.$executeRawUnsafe('DELETE FROM "Procedure" WHERE 0'));
      expect(shape(prismaError('sqlite-busy', undefined, '$executeRawUnsafe'))).toEqual(shape(rawQuery));
    } finally {
      holder.exec('ROLLBACK');
    }
  });
});

describe('a faulty database', () => {
  it('throws every transient kind of its provider, on both sides, and a failed write wrote nothing', async () => {
    const faulty = faultyDatabase(database(), { provider, rate: 1, seed: 1 });
    for (const kind of FAULT_KINDS[provider] as FaultKind[]) {
      for (const error of [driverError(kind), prismaError(kind, 'Tenant', 'create'), prismaError(kind, undefined, '$executeRaw')]) {
        expect(isTransientStorageError(error), `${kind}: ${describeStorageError(error)}`).toBe(true);
      }
    }
    const id = newId('tn');
    const data = { id, name: id.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 1 };
    const created = await caught(() => faulty.database.db.tenant.create({ data }));
    expect(isTransientStorageError(created)).toBe(true);
    const inTransaction = await caught(() =>
      faulty.database.db.$transaction(async (tx) => {
        faulty.enabled = false;
        await tx.tenant.create({ data });
        faulty.enabled = true;
        await tx.tenant.update({ where: { id }, data: { partitions: 2 } });
      }),
    );
    expect(isTransientStorageError(inTransaction)).toBe(true);
    const batch = await caught(() => faulty.database.db.$transaction([faulty.database.db.tenant.create({ data })]));
    expect(isTransientStorageError(batch)).toBe(true);
    const raw = await faulty.database.raw();
    const table = database().dialect.table('Tenant');
    const insert = { sql: `INSERT INTO ${table} ("id", "name", "partitions", "createdAt") VALUES ('${id}', '${data.name}', 1, CURRENT_TIMESTAMP)`, params: [] };
    expect(isTransientStorageError(await caught(() => raw.transaction([insert])))).toBe(true);
    expect(isTransientStorageError(await caught(() => raw.execute(insert.sql, [])))).toBe(true);
    expect(await db().tenant.findUnique({ where: { id } })).toBeNull();
    expect(faulty.injected.map((fault) => fault.side)).toEqual(['prisma', 'prisma', 'prisma', 'raw', 'raw']);
    expect(new Set(faulty.injected.map((fault) => fault.kind)).size).toBeGreaterThan(1);
  });

  it('fails the share of operations its plan says, the same ones for the same seed', async () => {
    const run = async (seed: number) => {
      const faulty = faultyDatabase(database(), { provider, rate: 0.2, seed });
      const outcomes: string[] = [];
      for (let i = 0; i < 200; i++) {
        const error = await caught(async () => {
          await faulty.database.db.tenant.count();
          throw new Error('passed');
        });
        outcomes.push(error instanceof Error && error.message === 'passed' ? 'ok' : (error as { code: string }).code);
      }
      return outcomes;
    };
    const first = await run(42);
    expect(await run(42)).toEqual(first);
    expect(await run(43)).not.toEqual(first);
    const failed = first.filter((outcome) => outcome !== 'ok').length;
    expect(failed).toBeGreaterThan(20);
    expect(failed).toBeLessThan(60);
  });
});
