import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { app, registerApp } from '../../server/app';
import { ManualClock } from '../../server/clock';
import { createApp } from '../../server/create-app';
import { parseEnv } from '../../server/env';
import { GATHER_HOLD_MS } from '../../server/cluster/gather';
import { ShardCountsPublisher } from '../../server/cluster/counts';
import type { ClusterEngine } from '../../server/engine/cluster-port';
import { ClusterMember } from '../../server/cluster/member';
import { MemberLock } from '../../server/cluster/member-lock';
import { Membership } from '../../server/cluster/membership';
import { clusterChannel } from '../../server/storage/cluster-session';
import { database as processDatabase } from '../helpers/app-db';
import { parseDatabaseUrl } from '../../server/storage/database-url';
import { applyMigrations } from '../../server/storage/migrate';
import { withTransactionHook } from '../helpers/raw-hook';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { waitFor } from '../helpers/wait-for';

// Cluster members in this process on a real PostgreSQL schema, each with its membership (MemberLock, held by a
// server's request thread) and an engine side beside an engine that holds no partitions (the members' bookkeeping is
// under test here; test/cluster/cluster.test.ts runs whole servers).

type Target = Extract<ReturnType<typeof parseDatabaseUrl>, { provider: 'postgres' }>;

/** An engine without partition loops: it records which tenants it was told to read the log of. */
function idleEngine(): ClusterEngine & { woken: string[] } {
  const woken: string[] = [];
  return {
    woken,
    partitionWaitMs: 1_000,
    wakeTenant: (tenantId) => void woken.push(tenantId),
    workers: async () => [],
    hasTenant: () => true,
    loadedTenants: () => [],
  };
}

describe('cluster members on one PostgreSQL schema', () => {
  let database: TestDatabase;
  let target: Target;
  let sql: pg.Client;
  const members: ClusterMember[] = [];
  const locks: MemberLock[] = [];

  beforeAll(async () => {
    database = createTestDatabase('postgres', 'member');
    const parsed = parseDatabaseUrl(database.url);
    if (parsed.provider !== 'postgres') throw new Error('the cluster runs on PostgreSQL');
    target = parsed;
    await applyMigrations(target);
    // The members' own storage: an app over the test's schema (server/create-app.ts), as a member's process has.
    registerApp(createApp({ env: parseEnv({ ...process.env, DATABASE_URL: database.url }) }));
    sql = new pg.Client({ connectionString: target.connectionString });
    await sql.connect();
  }, 120_000);

  // Each test joins its own members and they leave after it, so a failure does not carry into the next test.
  afterEach(async () => {
    for (const member of members.splice(0)) await member.leave().catch(() => undefined);
    for (const lock of locks.splice(0)) await lock.release().catch(() => undefined);
  });

  afterAll(async () => {
    await app().close();
    registerApp(undefined);
    await sql?.end();
    await database?.drop();
  });

  const tenant = async (id: string) => {
    await sql.query(`INSERT INTO "${target.schema}"."Tenant" ("id", "name", "partitions") VALUES ($1, $1, 8)`, [id]);
    return id;
  };
  const join = async (name: string, engine = idleEngine(), fullRefreshMs = Number.POSITIVE_INFINITY) => {
    const lock = new MemberLock(target, name);
    locks.push(lock);
    await lock.hold();
    // No safety-net reassignment unless asked: the tests count assignments, which only a change of members, tenants or gathers makes.
    const member = new ClusterMember(processDatabase(), target, name, fullRefreshMs);
    members.push(member);
    await member.start(engine);
    return { member, engine };
  };
  const gatherRow = async (tenantId: string) =>
    (
      await sql.query<{ member: string; untilMs: string }>(
        `SELECT "member", "untilMs"::text AS "untilMs" FROM "${target.schema}"."ClusterGather" WHERE "tenantId" = $1`,
        [tenantId],
      )
    ).rows[0];

  it('assigns again only when members, tenants or gathers change, and tells the other owners of new events', async () => {
    const a = await join('member-a');
    await tenant('tn_one');
    await a.member.settle(); // a tenant it did not know: assigned
    const assigned = a.member.stats.assignments;
    await a.member.settle();
    await a.member.settle();
    expect(a.member.stats.assignments).toBe(assigned);
    expect(a.member.mayOwn('tn_one', 0)).toBe(true);

    const b = await join('member-b');
    await a.member.settle();
    expect(a.member.stats.assignments).toBe(assigned + 1);
    const ownedByA = Array.from({ length: 8 }, (_, p) => a.member.mayOwn('tn_one', p)).filter(Boolean).length;
    const ownedByB = Array.from({ length: 8 }, (_, p) => b.member.mayOwn('tn_one', p)).filter(Boolean).length;
    expect([ownedByA, ownedByB]).toEqual([4, 4]);

    await tenant('tn_two');
    await a.member.settle();
    expect(a.member.stats.assignments).toBe(assigned + 2);

    // Events appended on a: b holds partitions of the tenant and is told at once; a does not wake itself by it.
    a.member.eventsAppended('tn_one');
    await waitFor('b told of the events', () => b.engine.woken.includes('tn_one'), Boolean, { timeoutMs: 10_000, everyMs: 10 });
    expect(a.engine.woken).toEqual([]);
  });

  it('a safety refresh that reads the same tenants and members keeps the assignment; a changed tenant alone is assigned again', async () => {
    // Every settle is a safety refresh: the tenants are read each time.
    const a = await join('member-a', idleEngine(), 0);
    await tenant('tn_kept');
    await a.member.settle();
    const assigned = a.member.stats.assignments;
    const owners = Array.from({ length: 8 }, (_, p) => a.member.mayOwn('tn_kept', p));
    await a.member.settle();
    await a.member.settle();
    expect(a.member.stats.assignments).toBe(assigned);

    // A tenant deleted and another created between two polls (same count, same partitions): the read differs.
    await sql.query(`DELETE FROM "${target.schema}"."Tenant" WHERE "id" = 'tn_kept'`);
    await tenant('tn_swapped');
    await a.member.settle();
    expect(a.member.stats.assignments).toBe(assigned + 1);
    expect(a.member.mayOwn('tn_swapped', 0)).toBe(true);
    expect(owners.every(Boolean)).toBe(true);
  });

  it('shares one gather among the operations of a tenant on a member, renews it, and lets it go with the last', async () => {
    const { member: a } = await join('member-a');
    const { member: b } = await join('member-b');
    const tenantId = await tenant('tn_gather');
    const first = await a.gather(tenantId, []);
    const second = await a.gather(tenantId, []);
    expect((await gatherRow(tenantId))?.member).toBe('member-a');

    // A gather older than its hold would be taken from it: renewing pushes the hold out again.
    await sql.query(`UPDATE "${target.schema}"."ClusterGather" SET "untilMs" = 0 WHERE "tenantId" = $1`, [tenantId]);
    await (a as unknown as { gathers: { renew(): Promise<void> } }).gathers.renew();
    expect(Number((await gatherRow(tenantId))!.untilMs)).toBeGreaterThan(Date.now() + GATHER_HOLD_MS / 2);

    await first();
    await first(); // letting go twice counts once
    expect((await gatherRow(tenantId))?.member).toBe('member-a'); // the second operation still holds it
    await second();
    expect(await gatherRow(tenantId)).toBeUndefined();

    // Another live member's gather makes the operation wait (a retry-later error), not take it.
    const held = await b.gather(tenantId, []);
    await expect(a.gather(tenantId, [])).rejects.toMatchObject({ name: 'RetryLaterError' });
    await held();
  });

  it('keeps a member live while its process holds the membership, whatever its engine side does', async () => {
    const { member: a } = await join('member-a');
    // A member with no engine side at all (as while its engine thread is busy or restarting): its lock and
    // heartbeat are the request thread's, so it stays live and keeps its share.
    const lock = new MemberLock(target, 'member-c');
    locks.push(lock);
    await lock.hold();
    expect(await a.isGone('member-c')).toBe(false);
    await a.settle();
    expect(a.liveMembers()).toContain('member-c');
    await lock.release();
    expect(await a.isGone('member-c')).toBe(true);
    await a.settle();
    expect(a.liveMembers()).not.toContain('member-c');
  });

  it('stops the heartbeat while its engine does not answer, so the others leave it out until it answers again', async () => {
    const { member: a } = await join('member-a');
    let engineAnswers = true;
    const lock = new MemberLock(target, 'member-h', () => engineAnswers);
    locks.push(lock);
    await lock.hold();
    await a.settle();
    expect(a.liveMembers()).toContain('member-h');

    // The engine stops answering; its last heartbeat is then made older than the stale bound (as 15 s later). The
    // first beat waits for any beat already under way, so none lands after the ageing.
    engineAnswers = false;
    await lock.beat();
    await sql.query(`UPDATE "${target.schema}"."ClusterMember" SET "heartbeatMs" = 0 WHERE "name" = 'member-h'`);
    await lock.beat();
    expect(await a.isGone('member-h')).toBe(true);
    await a.settle();
    expect(a.liveMembers()).not.toContain('member-h');

    engineAnswers = true;
    await lock.beat();
    expect(await a.isGone('member-h')).toBe(false);
    await a.settle();
    expect(a.liveMembers()).toContain('member-h');
  });

  it('beats on its clock: a second of the clock writes the heartbeat, less does not', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const lock = new MemberLock(target, 'member-t', () => true, clock);
    locks.push(lock);
    await lock.hold();
    const heartbeat = async () =>
      Number((await sql.query(`SELECT "heartbeatMs" FROM "${target.schema}"."ClusterMember" WHERE "name" = 'member-t'`)).rows[0].heartbeatMs);
    await sql.query(`UPDATE "${target.schema}"."ClusterMember" SET "heartbeatMs" = 0 WHERE "name" = 'member-t'`);
    await clock.advance(999);
    await lock.beatsSettled();
    expect(await heartbeat()).toBe(0);
    await clock.advance(1);
    await lock.beatsSettled();
    expect(await heartbeat()).toBeGreaterThan(0);
    await sql.query(`UPDATE "${target.schema}"."ClusterMember" SET "heartbeatMs" = 0 WHERE "name" = 'member-t'`);
    await clock.advance(1_000);
    await lock.beatsSettled();
    expect(await heartbeat()).toBeGreaterThan(0);
    await lock.release();
    expect(clock.pendingSleepers()).toBe(0); // the release ended the heartbeat's sleep
  });

  // A leave that comes while the connection is still being made (as on a reconnect after PostgreSQL dropped it) must
  // win: the join used to finish afterwards and bring the member back, listening or holding its lock for good.
  it('a member that leaves while it is still connecting stays gone', async () => {
    const lock = new MemberLock(target, 'member-d');
    locks.push(lock);
    const holding = lock.hold();
    await lock.release();
    await holding;
    const rows = await sql.query(`SELECT 1 FROM "${target.schema}"."ClusterMember" WHERE "name" = 'member-d'`);
    expect(rows.rowCount).toBe(0);

    const channel = new Membership(target, 'member-d', () => undefined);
    const joining = channel.join();
    await channel.leave();
    await joining;
    await expect(channel.onSession(async () => undefined)).rejects.toThrow('not connected');
  });

  it('publishes the counts of every instance that changed within one interval together: 300 instances, 2 transactions, 300 notices', async () => {
    const tenantId = await tenant('tn_counts_batch');
    const listener = new pg.Client({ connectionString: target.connectionString });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN "${clusterChannel(target)}"`);
    const transactions: number[] = [];
    const watched = withTransactionHook(processDatabase(), (statements, commit) => {
      transactions.push(statements.length);
      return commit();
    });
    const publisher = new ShardCountsPublisher(watched, clusterChannel(target));
    try {
      const instances = Array.from({ length: 300 }, (_, i) => `in_batch_${i}`);
      for (const [i, instanceId] of instances.entries()) {
        const counts = { instanceId, total: i, entered: i, steps: { wait: i }, edges: {} };
        publisher.schedule(tenantId, instanceId, () => [{ partition: i % 8, epoch: 1, counts }]);
      }
      await waitFor(
        'the 300 notices',
        async () => heard.filter((payload) => payload.includes('in_batch_')).length,
        (n) => n >= 300,
      );
      // 256 instances a publication: two transactions, each an upsert and one statement of NOTIFYs.
      expect(transactions).toEqual([2, 2]);
      const rows = await sql.query<{ n: string }>(`SELECT COUNT(*) AS n FROM "${target.schema}"."ShardCounts" WHERE "tenantId" = $1`, [tenantId]);
      expect(Number(rows.rows[0].n)).toBe(300);
      expect(JSON.parse(heard.find((payload) => payload.includes('"in_batch_7"'))!)).toMatchObject({
        kind: 'counts',
        tenantId,
        instanceId: 'in_batch_7',
        parts: [[7, 1, expect.any(Number), { total: 7, steps: { wait: 7 } }]],
      });
    } finally {
      publisher.close();
      await listener.end();
    }
  });
});
