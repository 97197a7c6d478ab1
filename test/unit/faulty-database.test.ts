import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { describeStorageError, isTransientStorageError } from '../../server/storage/transient';
import { driverError, FAULT_KINDS, faultyDatabase, prismaError, type FaultKind } from '../fixtures/faulty-database';
import { caught, testProvider as provider, useRealStorageErrors } from '../helpers/real-storage-errors';
import { PG_BASE_URL } from '../helpers/test-database';

// The fault-injecting Database (test/fixtures/faulty-database.ts): its errors have the shape of real ones provoked
// here, every kind is transient, a failed operation wrote nothing, and a seed gives the same faults.

const storage = useRealStorageErrors('cf_faulty');

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
    const admin = await storage.pgAdmin();
    const refusedUrl = await storage.exhaustedRole(admin);
    const refused = storage.prismaPg(refusedUrl);
    expect(shape(prismaError('too-many-clients', 'Procedure', 'findUnique'))).toEqual(
      shape(await caught(() => refused.procedure.findUnique({ where: { id: 'x' } }))),
    );
    expect(shape(prismaError('too-many-clients', undefined, '$queryRawUnsafe'))).toEqual(shape(await caught(() => refused.$queryRawUnsafe('SELECT 1'))));
    const realDriver = await caught(() => new pg.Client({ connectionString: refusedUrl }).connect());
    expect(shape(driverError('too-many-clients'))).toEqual(shape(realDriver));

    const table = await storage.scratchTable(admin);
    const client = storage.prismaPg(PG_BASE_URL, { max: 2 });
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
    const { impatient, raw: impatientRaw, release } = storage.lockedSqlite();
    try {
      expect(shape(driverError('sqlite-busy'))).toEqual(shape(await caught(() => impatientRaw.exec('DELETE FROM "Procedure" WHERE 0'))));
      const model = await caught(() => impatient.procedure.updateMany({ where: { id: 'x' }, data: { attempts: 1 } }));
      expect(shape(prismaError('sqlite-busy', 'Procedure', 'updateMany'))).toEqual(shape(model));
      expect(describeStorageError(prismaError('sqlite-busy', 'Procedure', 'updateMany'))).toBe(describeStorageError(model));
      const rawQuery = await caught(() => impatient.$executeRawUnsafe('DELETE FROM "Procedure" WHERE 0'));
      expect(shape(prismaError('sqlite-busy', undefined, '$executeRawUnsafe'))).toEqual(shape(rawQuery));
    } finally {
      release();
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
