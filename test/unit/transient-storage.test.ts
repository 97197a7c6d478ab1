import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { newId } from '../../server/ids';
import { updateTenantLimits } from '../../server/limits/limits';
import { ProcedureTypes } from '../../server/procedures/registry';
import { createProcedureRunner } from '../../server/procedures/runner';
import { STORAGE_PATIENCE_MS } from '../../server/procedures/turns';
import { RetryLaterError, type ProcedureRunner, type ProcedureView } from '../../server/procedures/types';
import type { Database } from '../../server/storage/database';
import { errorResponse } from '../../server/http/respond';
import { deserializeError, serializeError } from '../../server/engine/thread-protocol';
import type { Db } from '../../server/storage/db';
import { db, database } from '../helpers/app-db';
import { describeStorageError, isTransientStorageError } from '../../server/storage/transient';
import { DELIVER_TYPE, deliveryProcedureId } from '../../server/webhooks/deliveries';
import { createDestination } from '../../server/webhooks/destinations';
import { WebhookPump } from '../../server/webhooks/pump';
import { startReceiver } from '../fixtures/webhooks/receiver';
import { caught, testProvider, useRealStorageErrors } from '../helpers/real-storage-errors';
import { PG_BASE_URL } from '../helpers/test-database';

// Transient storage errors (server/storage/transient.ts) provoked for real on the provider under test, classified, and
// retried by the procedure runner without counting as attempts, for a procedure and for a webhook delivery.

const storage = useRealStorageErrors('cf_transient');
const { pgAdmin, exhaustedRole, prismaPg, lockedSqlite } = storage;
const provider = testProvider;

/** A real transient error of the provider under test, from the ORM: too many connections, or SQLite's write lock held. */
async function transientError(): Promise<unknown> {
  if (provider === 'postgres') return caught(async () => prismaPg(await exhaustedRole(await pgAdmin())).procedure.findUnique({ where: { id: 'x' } }));
  const locked = lockedSqlite();
  const error = await caught(() => locked.impatient.procedure.updateMany({ where: { id: 'x' }, data: { attempts: 1 } }));
  locked.release();
  return error;
}

/** A real permanent error: a unique violation. */
async function permanentError(): Promise<unknown> {
  const id = newId('tn');
  await db().tenant.create({ data: { id, name: id.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 1 } });
  return caught(() => db().tenant.create({ data: { id, name: `${id.toLowerCase().replace(/[^a-z0-9]/g, 'x')}y`, partitions: 1 } }));
}

describe.runIf(provider === 'postgres')('transient storage errors of PostgreSQL', () => {
  it('too many connections (53300): through Prisma (P2037, and inside a raw query P2010) and from pg', async () => {
    const url = await exhaustedRole(await pgAdmin());
    const orm = await caught(() => prismaPg(url).procedure.findUnique({ where: { id: 'x' } }));
    expect(orm).toMatchObject({ code: 'P2037' });
    expect(isTransientStorageError(orm)).toBe(true);
    expect(describeStorageError(orm)).toMatch(/^too many connections for role "cf_transient_\w+" \(53300\)$/);
    const rawQuery = await caught(() => prismaPg(url).$queryRawUnsafe('SELECT 1'));
    expect(rawQuery).toMatchObject({ code: 'P2010' });
    expect(isTransientStorageError(rawQuery)).toBe(true);
    const driver = await caught(() => new pg.Client({ connectionString: url }).connect());
    expect(driver).toMatchObject({ code: '53300' });
    expect(isTransientStorageError(driver)).toBe(true);
  });

  it('a closed port (P1001, ECONNREFUSED), a pool with no free connection in time, a terminated backend (57P01)', async () => {
    const closed = PG_BASE_URL.replace(/:\d+\//, ':1/');
    const orm = await caught(() => prismaPg(closed).procedure.findUnique({ where: { id: 'x' } }));
    expect(orm).toMatchObject({ code: 'P1001' });
    expect(isTransientStorageError(orm)).toBe(true);
    const driver = await caught(() => new pg.Client({ connectionString: closed }).connect());
    expect(driver).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isTransientStorageError(driver)).toBe(true);

    // One pooled connection, opened first, then held by a transaction: a query waits for it past the pool's timeout.
    const small = prismaPg(PG_BASE_URL, { connectionTimeoutMillis: 1_000 });
    await small.$queryRawUnsafe('SELECT 1');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const holds = new Promise<void>((resolve) => (entered = resolve));
    const holding = small.$transaction(
      () => {
        entered();
        return held;
      },
      { timeout: 30_000 },
    );
    await holds;
    const poolTimeout = await caught(() => small.$queryRawUnsafe('SELECT 1'));
    expect((poolTimeout as Error).message).toBe('timeout exceeded when trying to connect');
    expect(isTransientStorageError(poolTimeout)).toBe(true);
    release();
    await holding;

    const admin = await pgAdmin();
    const [{ pid }] = await small.$queryRawUnsafe<{ pid: number }[]>('SELECT pg_backend_pid() AS pid');
    const sleeping = caught(() => small.$queryRawUnsafe('SELECT pg_sleep(5)'));
    await waitUntil(
      async () => (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE '%pg_sleep%'`, [pid])).rowCount === 1,
    );
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const terminated = await sleeping;
    // PostgreSQL's FATAL message, or pg's own when the socket closed before that message was read.
    expect(describeStorageError(terminated)).toMatch(/^(terminating connection due to administrator command \(57P01\)|Connection terminated.*)$/);
    expect(isTransientStorageError(terminated)).toBe(true);
  });

  it('serialization failure (40001), deadlock (40P01) and lock not available (55P03) through Prisma', async () => {
    const admin = await pgAdmin();
    const table = await storage.scratchTable(admin, 2);
    const client = prismaPg(PG_BASE_URL, { max: 2 });
    const other = await pgAdmin();

    const serialization = await caught(() =>
      client.$transaction(
        async (tx) => {
          await tx.$queryRawUnsafe(`SELECT v FROM ${table} WHERE id = 1`);
          await other.query(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
          await tx.$executeRawUnsafe(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
        },
        { isolationLevel: 'RepeatableRead' },
      ),
    );
    expect(describeStorageError(serialization)).toBe('could not serialize access due to concurrent update (40001)');
    expect(isTransientStorageError(serialization)).toBe(true);

    // The backend that finds the cycle is the one cancelled, and each looks only when its own deadlock_timeout (1 s)
    // has passed since it began to wait: on a loaded machine the other session's look came first once and made it the
    // victim. With its timeout out of reach, only the transaction's backend looks.
    await other.query("SET deadlock_timeout = '1min'");
    const deadlock = await caught(() =>
      client.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
        await other.query('BEGIN');
        await other.query(`UPDATE ${table} SET v = v + 1 WHERE id = 2`);
        // A Prisma promise runs once awaited: this starts the statement, and holds its failure for the end.
        const waiting = tx.$executeRawUnsafe(`UPDATE ${table} SET v = v + 2 WHERE id = 2`).then(
          () => null,
          (error: unknown) => error,
        );
        await waitUntil(
          async () =>
            (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%v = v + 2 WHERE id = 2%'`)).rowCount === 1,
        );
        const crossing = other.query(`UPDATE ${table} SET v = v + 1 WHERE id = 1`);
        const failure = await waiting;
        await crossing;
        await other.query('ROLLBACK');
        if (failure) throw failure;
      }),
    );
    expect(describeStorageError(deadlock)).toBe('deadlock detected (40P01)');
    expect(isTransientStorageError(deadlock)).toBe(true);

    await other.query('BEGIN');
    await other.query(`SELECT * FROM ${table} WHERE id = 1 FOR UPDATE`);
    const locked = await caught(() => client.$queryRawUnsafe(`SELECT * FROM ${table} WHERE id = 1 FOR UPDATE NOWAIT`));
    await other.query('ROLLBACK');
    expect(describeStorageError(locked)).toBe(`could not obtain lock on row in relation "${table}" (55P03)`);
    expect(isTransientStorageError(locked)).toBe(true);

    const syntax = await caught(() => client.$queryRawUnsafe('SELEC 1'));
    expect(isTransientStorageError(syntax)).toBe(false);
    const driverSyntax = await caught(() => other.query('SELEC 1'));
    expect(driverSyntax).toMatchObject({ code: '42601' });
    expect(isTransientStorageError(driverSyntax)).toBe(false);
  });
});

describe.runIf(provider === 'sqlite')('transient storage errors of SQLite', () => {
  it('SQLITE_BUSY from the driver, and through Prisma (P1008 from the ORM, P2010 from a raw query)', async () => {
    const locked = lockedSqlite();
    try {
      const driver = await caught(() => locked.raw.exec('DELETE FROM "Procedure" WHERE 0'));
      expect(driver).toMatchObject({ code: 'SQLITE_BUSY' });
      expect(isTransientStorageError(driver)).toBe(true);
      const orm = await caught(() => locked.impatient.procedure.updateMany({ where: { id: 'x' }, data: { attempts: 1 } }));
      expect(orm).toMatchObject({ code: 'P1008' });
      expect(isTransientStorageError(orm)).toBe(true);
      expect(describeStorageError(orm)).toBe('database is locked (SQLITE_BUSY)');
      const rawQuery = await caught(() => locked.impatient.$executeRawUnsafe('DELETE FROM "Procedure" WHERE 0'));
      expect(rawQuery).toMatchObject({ code: 'P2010' });
      expect(isTransientStorageError(rawQuery)).toBe(true);
    } finally {
      locked.release();
    }
    // SQLITE_LOCKED (a table locked within one connection) cannot be provoked through better-sqlite3, which refuses
    // the statement itself; its error class is the driver's own.
    expect(isTransientStorageError(new BetterSqlite3.SqliteError('database table is locked', 'SQLITE_LOCKED'))).toBe(true);
    const constraint = await caught(() => locked.raw.exec('INSERT INTO "_prisma_migrations" SELECT * FROM "_prisma_migrations"'));
    expect(constraint).toMatchObject({ code: expect.stringMatching(/^SQLITE_CONSTRAINT/) });
    expect(isTransientStorageError(constraint)).toBe(false);
  });
});

describe('classification', () => {
  it('a unique violation, a missing record and an error of our own are permanent', async () => {
    expect(isTransientStorageError(await permanentError())).toBe(false);
    const missing = await caught(() => db().procedure.update({ where: { id: 'missing' }, data: { attempts: 1 } }));
    expect(missing).toMatchObject({ code: 'P2025' });
    expect(isTransientStorageError(missing)).toBe(false);
    expect(isTransientStorageError(new Error('quota exceeded'))).toBe(false);
    expect(isTransientStorageError(new Error('wrapped', { cause: await transientError() }))).toBe(true);
  });
});

/** Real transient errors of the provider under test, each as a route would get it. */
async function transientErrors(): Promise<[string, unknown][]> {
  if (provider === 'postgres') {
    const closed = PG_BASE_URL.replace(/:\d+\//, ':1/');
    return [
      ['too many connections (53300, Prisma P2037)', await transientError()],
      ['a closed port (P1001)', await caught(() => prismaPg(closed).procedure.findUnique({ where: { id: 'x' } }))],
      ['too many connections from pg (53300)', await caught(async () => new pg.Client({ connectionString: await exhaustedRole(await pgAdmin()) }).connect())],
    ];
  }
  const locked = lockedSqlite();
  try {
    return [
      ['the write lock held (P1008)', await caught(() => locked.impatient.procedure.updateMany({ where: { id: 'x' }, data: { attempts: 1 } }))],
      ['the write lock held, in a raw query (P2010)', await caught(() => locked.impatient.$executeRawUnsafe('DELETE FROM "Procedure" WHERE 0'))],
      ['the write lock held, from the driver (SQLITE_BUSY)', await caught(() => locked.raw.exec('DELETE FROM "Procedure" WHERE 0'))],
    ];
  } finally {
    locked.release();
  }
}

describe('the 503 mapping (issue 36 §3: the same classification as the retrying parts)', () => {
  it('answers every real transient error 503 unavailable with Retry-After, also when it crossed from the engine thread', async () => {
    for (const [name, error] of await transientErrors()) {
      expect(isTransientStorageError(error), name).toBe(true);
      for (const [how, seen] of [
        ['in the request thread', error],
        ['from the engine thread', deserializeError(serializeError(error))],
      ] as const) {
        const response = errorResponse(seen);
        expect(response.status, `${name} ${how}`).toBe(503);
        expect(response.headers.get('retry-after')).toBe('1');
        expect((await response.json()).error.code).toBe('unavailable');
      }
    }
  });

  it('answers a permanent storage error by what it is, never 503, also when it crossed from the engine thread', async () => {
    const unique = await permanentError();
    for (const seen of [unique, deserializeError(serializeError(unique))]) expect(errorResponse(seen).status).toBe(409);
    const syntax = await caught(() => db().$queryRawUnsafe('SELEC 1'));
    for (const seen of [syntax, deserializeError(serializeError(syntax))]) expect(errorResponse(seen).status).toBe(500);
  });
});

// A procedure type whose steps throw what its script says: storage errors (real ones), or a failure of the remote side.
type Throw = unknown | 'remote';
const throws = new Map<string, Throw[]>();
const STORAGE = 'test.transient-storage';
const MAX_RETRIES = 1;

/** Waits for what another process (PostgreSQL) or the runner's I/O does, through vitest's shared poll. */
async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  await expect.poll(check, { timeout: 20_000, interval: 5 }).toBe(true);
}

describe('the procedure runner', () => {
  let clock: ManualClock;
  let runner: ProcedureRunner;
  let transient: unknown;
  let permanent: unknown;
  const types = new ProcedureTypes();

  beforeAll(async () => {
    transient = await transientError();
    permanent = await permanentError();
    types.register({
      type: STORAGE,
      maxRetries: MAX_RETRIES,
      supportsRollback: false,
      create: (state) => ({
        lockKeys: () => [],
        state: () => state,
        async execute() {
          const next = throws.get((state as { name: string }).name)?.shift();
          if (next === 'remote') throw new RetryLaterError('HTTP 503');
          if (next !== undefined) throw next;
          return { kind: 'done' as const, output: 'ok' };
        },
      }),
    });
  });

  afterEach(async () => {
    await runner.stop();
  });

  function start(on: Database = database()): void {
    clock = new ManualClock();
    runner = createProcedureRunner(on, { clock, types, owner: `transient-${newId('o')}` });
    void runner.start();
  }

  /** The next outcome the runner records after `previous`: a retry scheduled anew, or the end. */
  async function next(id: string, previous?: ProcedureView): Promise<ProcedureView> {
    let view: ProcedureView | null = null;
    await waitUntil(async () => {
      view = await runner.get(id);
      if (view === null) return false;
      if (view.state === 'done' || view.state === 'failed') return true;
      return view.state === 'retrying' && view.nextAttemptAt !== null && view.nextAttemptAt !== previous?.nextAttemptAt;
    });
    return view!;
  }

  /** Moves the clock to the retry `view` is waiting for, and returns what the runner records next. */
  async function retried(id: string, view: ProcedureView): Promise<ProcedureView> {
    await clock.advance(Date.parse(view.nextAttemptAt!) - clock.now());
    return next(id, view);
  }

  async function submit(...script: Throw[]): Promise<string> {
    const name = newId('s');
    throws.set(name, script);
    return runner.submit(STORAGE, { name });
  }

  it('retries a step that hit a transient storage error once, twice, with backoff, without counting attempts', async () => {
    start();
    const once = await submit(transient);
    const retrying = await next(once);
    expect(retrying).toMatchObject({ state: 'retrying', attempts: 0, error: `storage error: ${describeStorageError(transient)}` });
    // Backoff with jitter: the first retry is due 500–625 ms later, not at once.
    const due = Date.parse(retrying.nextAttemptAt!) - clock.now();
    expect(due).toBeGreaterThanOrEqual(500);
    expect(due).toBeLessThanOrEqual(625);
    expect(await retried(once, retrying)).toMatchObject({ state: 'done', attempts: 0, error: null, output: 'ok' });

    // Storage errors around a remote failure: the one remote retry allowed (maxRetries 1) is not used up by them.
    const mixed = await submit(transient, transient, 'remote', transient);
    let view = await next(mixed);
    for (const attempts of [0, 0, 1, 1]) {
      expect(view).toMatchObject({ state: 'retrying', attempts });
      view = await retried(mixed, view);
    }
    expect(view).toMatchObject({ state: 'done', attempts: 0 });
  });

  it('fails a permanent storage error at once, and a transient one that lasts past the patience, saying why', async () => {
    start();
    const id = await submit(permanent);
    const failed = await next(id);
    expect(failed.state).toBe('failed');
    // The database's message, not Prisma's with the call site and source lines (server paths).
    expect(failed.error).toBe(describeStorageError(permanent));
    expect(failed.error).toMatch(/^(UNIQUE constraint failed: Tenant\.id \(SQLITE_CONSTRAINT_PRIMARYKEY\)|duplicate key value .+ \(23505\))$/);

    const lasting = await submit(...Array.from({ length: 100 }, () => transient));
    let view = await next(lasting);
    while (view.state === 'retrying') view = await retried(lasting, view);
    expect(view).toMatchObject({ state: 'failed', attempts: 0 });
    const [, retries, seconds] = view.error!.match(/^storage error: .+ \(gave up after (\d+) retries over (\d+) s\)$/)!;
    expect(Number(seconds)).toBeGreaterThanOrEqual(STORAGE_PATIENCE_MS / 1000);
    // Backoff to 60 s with jitter: 7 retries to reach a minute, then one a minute or so until the patience is spent.
    expect(Number(retries)).toBeGreaterThanOrEqual(15);
    expect(Number(retries)).toBeLessThanOrEqual(22);
  });

  it('keeps a webhook delivery pending through transient storage errors and delivers it once; a permanent one fails it with lastError', async () => {
    // The delivery's step reads the delivery first: those reads fail as the script says.
    const failReads: unknown[] = [];
    const real = database();
    const faulty: Database = {
      ...real,
      db: new Proxy(real.db, {
        get(target, property) {
          const value = Reflect.get(target, property, target);
          if (property !== 'webhookDelivery') return typeof value === 'function' ? value.bind(target) : value;
          return {
            ...value,
            findUnique: (...args: Parameters<Db['webhookDelivery']['findUnique']>) => {
              const next = failReads.shift();
              return next === undefined ? value.findUnique(...args) : Promise.reject(next);
            },
            updateMany: (...args: Parameters<Db['webhookDelivery']['updateMany']>) => value.updateMany(...args),
          };
        },
      }),
    };
    start(faulty);
    const hook = await startReceiver({ secret: 'whsec_transient-0123456789', now: () => clock.now(), seed: 1 });
    storage.defer(() => hook.close());
    const tenantId = newId('tn');
    await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 1 } });
    await updateTenantLimits(real, tenantId, { webhookPrivateAddresses: true });
    const destination = { name: 'crm', url: hook.url, secret: 'whsec_transient-0123456789', headers: {}, batchSize: 10_000, timeoutMs: 5_000 };
    await createDestination(real, tenantId, { ...destination, allNotifications: false, start: 'head' }, clock.now());
    const pump = new WebhookPump({ database: real, runner, clock });
    let seq = Number((await db().journal.findFirst({ orderBy: { seq: 'desc' } }))?.seq ?? 0n);
    const move = async (users: number[]) => {
      const bitmap = serializeBitmap(new RoaringBitmap32(users));
      await db().journal.create({
        data: {
          seq: BigInt(++seq),
          tenantId,
          instanceId: 'in_1',
          partition: 0,
          fromStep: 'entry',
          toStep: 'notify',
          user: null,
          bitmap,
          count: BigInt(users.length),
          leaveAction: null,
          enterAction: 'webhook:crm',
          timeMs: BigInt(clock.now()),
        },
      });
      await pump.pumpOnce();
      const delivery = await db().webhookDelivery.findFirstOrThrow({ where: { destination: { tenantId } }, orderBy: { fromSeq: 'desc' } });
      return { delivery: delivery.id, procedure: deliveryProcedureId(delivery.id, 0) };
    };

    failReads.push(transient, transient);
    const first = await move([1, 2, 3]);
    let view = await next(first.procedure);
    for (let round = 0; round < 2; round++) {
      expect(view).toMatchObject({ type: DELIVER_TYPE, state: 'retrying', attempts: 0 });
      expect(await db().webhookDelivery.findUniqueOrThrow({ where: { id: first.delivery } })).toMatchObject({ status: 'pending', attempts: 0 });
      view = await retried(first.procedure, view);
    }
    expect(view.state).toBe('done');
    expect(await db().webhookDelivery.findUniqueOrThrow({ where: { id: first.delivery } })).toMatchObject({
      status: 'delivered',
      attempts: 1,
      lastError: null,
    });
    expect(hook.received.filter((r) => r.id === first.delivery)).toHaveLength(1);

    failReads.push(permanent);
    const second = await move([4, 5]);
    const failed = await next(second.procedure);
    expect(failed.state).toBe('failed');
    expect(failed.error).toBe(describeStorageError(permanent));
    const delivery = await db().webhookDelivery.findUniqueOrThrow({ where: { id: second.delivery } });
    expect(delivery).toMatchObject({ status: 'failed', attempts: 0 });
    expect(delivery.lastError).toBe(describeStorageError(permanent));
    expect(hook.received.filter((r) => r.id === second.delivery)).toHaveLength(0);
  }, 60_000);
});
