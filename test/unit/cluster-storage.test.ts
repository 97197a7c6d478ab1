import { afterEach, describe, expect, it } from 'vitest';
import { ClusterSession } from '../../server/storage/cluster-session';
import { database } from '../helpers/app-db';
import { parseDatabaseUrl, type PostgresTarget } from '../../server/storage/database-url';
import { assignmentShape, claimGather, gatherHolder, releaseGather, renewGathers, tenantsToAssign } from '../../server/storage/gathers';
import { beatMemberRow, isMemberLive, liveMemberNames, markMemberDraining, removeMember, tryMemberLock, writeMemberRow } from '../../server/storage/membership';
import { publishShardCounts, readPublishedCounts, readShardFigures } from '../../server/storage/shard-counts';

// The contract of the cluster's storage operations (server/storage/: membership, gathers, shard counts), which
// server/cluster/ builds on. The reads of published counts run on both providers; the rest is PostgreSQL's alone
// (advisory locks, LISTEN/NOTIFY, the database's clock): SQLite is one process and joins no cluster.

const onPostgres = process.env.CROWDFLOW_TEST_PROVIDER === 'postgres';
const STALE_MS = 15_000;
const HOLD_MS = 60_000;

const tenant = (id: string, partitions = 4) => database().db.tenant.create({ data: { id, name: id, partitions } });

describe('published shard counts', () => {
  it('read back per partition, with their tenant’s partition count; nothing while either is missing', async () => {
    await tenant('tn_read');
    expect(await readShardFigures(database(), 'tn_read', 'in_a')).toBeUndefined();
    const figure = (partition: number, epoch: number, version: number) => ({
      tenantId: 'tn_read',
      instanceId: 'in_a',
      partition,
      epoch,
      version,
      counts: JSON.stringify({ partition, epoch }),
    });
    await database().db.shardCounts.createMany({ data: [figure(0, 1, 10), figure(3, 2, 20)] });
    const read = await readShardFigures(database(), 'tn_read', 'in_a');
    expect(read?.partitions).toBe(4);
    expect(read?.figures.sort((a, b) => a.partition - b.partition)).toEqual([
      { partition: 0, epoch: 1, version: 10, counts: '{"partition":0,"epoch":1}' },
      { partition: 3, epoch: 2, version: 20, counts: '{"partition":3,"epoch":2}' },
    ]);
    expect(await readPublishedCounts(database(), 'tn_read', 'in_a')).toEqual(
      new Map([
        [0, '{"partition":0,"epoch":1}'],
        [3, '{"partition":3,"epoch":2}'],
      ]),
    );
    expect(await readShardFigures(database(), 'tn_none', 'in_a')).toBeUndefined();
  });
});

describe.runIf(onPostgres)('cluster sessions on PostgreSQL', () => {
  const sessions: ClusterSession[] = [];
  const target = () => parseDatabaseUrl(process.env.DATABASE_URL!) as PostgresTarget;
  const open = async (heard?: (payload: string) => void) => {
    const session = await ClusterSession.open(target(), 'contract test', { failed: () => undefined, ended: () => undefined, heard }, () => false);
    sessions.push(session);
    return session;
  };
  afterEach(async () => {
    for (const session of sessions.splice(0)) await session.end();
  });

  it('membership: one session a lock key; live while locked, beating and not draining; dead rows go', async () => {
    const [a, b] = [await open(), await open()];
    expect(await tryMemberLock(a, 7)).toBe(true);
    expect(await tryMemberLock(b, 7)).toBe(false);
    expect(await tryMemberLock(b, 8)).toBe(true);
    await writeMemberRow(a, 'member-a', 7);
    await writeMemberRow(b, 'member-b', 8);
    expect(await liveMemberNames(a, STALE_MS)).toEqual(['member-a', 'member-b']);
    expect(await beatMemberRow(a, 'member-a', 7)).toBe(true);
    expect(await beatMemberRow(a, 'member-a', 9)).toBe(false); // another lock key: not its row

    await markMemberDraining(b, 'member-b');
    expect(await liveMemberNames(a, STALE_MS)).toEqual(['member-a']);
    expect(await isMemberLive(a, 'member-b', STALE_MS)).toBe(true); // draining, still holding its partitions' leases
    await writeMemberRow(b, 'member-b', 8); // joining again ends the draining
    expect(await liveMemberNames(a, STALE_MS)).toEqual(['member-a', 'member-b']);

    await removeMember(b, 'member-b', 8);
    expect(await isMemberLive(a, 'member-b', STALE_MS)).toBe(false);
    expect(await beatMemberRow(b, 'member-b', 8)).toBe(false);
    expect(await tryMemberLock(a, 8)).toBe(true); // released: free to take

    // A session that ends takes its lock along: its row is a dead member's, deleted on the next read.
    const c = await open();
    expect(await tryMemberLock(c, 11)).toBe(true);
    await writeMemberRow(c, 'member-c', 11);
    expect(await isMemberLive(a, 'member-c', STALE_MS)).toBe(true);
    await c.end();
    await expect.poll(() => isMemberLive(a, 'member-c', STALE_MS)).toBe(false);
    expect(await liveMemberNames(a, STALE_MS)).toEqual(['member-a']);
    expect(await database().db.clusterMember.count({ where: { name: 'member-c' } })).toBe(0);
  });

  it('gathers: claimed compare-and-set on the holder read, renewed by their holder, let go by it alone', async () => {
    const session = await open();
    await tenant('tn_g1', 2);
    await tenant('tn_g2', 3);
    expect(await gatherHolder(session, 'tn_g1')).toBeUndefined();
    expect(await claimGather(session, 'tn_g1', 'member-a', 'member-a', HOLD_MS)).toBe(true);
    expect(await gatherHolder(session, 'tn_g1')).toEqual({ member: 'member-a', current: true });
    // b read no row (or an older holder): its compare-and-set finds member-a there and fails.
    expect(await claimGather(session, 'tn_g1', 'member-b', 'member-b', HOLD_MS)).toBe(false);
    expect((await tenantsToAssign(session)).filter((t) => t.id.startsWith('tn_g'))).toEqual([
      { id: 'tn_g1', partitions: 2, gatheredBy: 'member-a' },
      { id: 'tn_g2', partitions: 3, gatheredBy: null },
    ]);
    expect((await assignmentShape(session)).gathers).toBe('tn_g1=member-a');

    // A hold run out is no gather: the assignment leaves it out, and a claim that read it takes it over.
    await renewGathers(session, ['tn_g1'], 'member-a', -1);
    expect(await gatherHolder(session, 'tn_g1')).toEqual({ member: 'member-a', current: false });
    expect((await assignmentShape(session)).gathers).toBeNull();
    await renewGathers(session, ['tn_g1'], 'member-b', HOLD_MS); // not b's: untouched
    expect((await gatherHolder(session, 'tn_g1'))?.current).toBe(false);
    await renewGathers(session, ['tn_g1'], 'member-a', HOLD_MS);
    expect((await gatherHolder(session, 'tn_g1'))?.current).toBe(true);

    await releaseGather(session, 'tn_g1', 'member-b');
    expect((await gatherHolder(session, 'tn_g1'))?.member).toBe('member-a');
    expect(await claimGather(session, 'tn_g1', 'member-b', 'member-a', HOLD_MS)).toBe(true);
    await releaseGather(session, 'tn_g1', 'member-b');
    expect(await gatherHolder(session, 'tn_g1')).toBeUndefined();
  });

  it('shard counts: a publication keeps only newer figures, drops stopped instances and is heard on the channel', async () => {
    const heard: string[] = [];
    const listener = await open((payload) => heard.push(payload));
    await listener.listen();
    await tenant('tn_pub', 2);
    const publish = (stopped: string[], figures: [string, number, number, number][], notices: string[]) =>
      publishShardCounts(database(), listener.channel, {
        stopped: stopped.map((instanceId) => ({ tenantId: 'tn_pub', instanceId })),
        figures: figures.map(([instanceId, partition, epoch, version]) => ['tn_pub', instanceId, partition, epoch, version, `{"v":${version}}`]),
        notices,
      });
    await publish(
      [],
      [
        ['in_x', 0, 2, 5],
        ['in_x', 1, 2, 5],
        ['in_y', 0, 1, 1],
      ],
      ['first'],
    );
    await publish(
      [],
      [
        ['in_x', 0, 2, 4],
        ['in_x', 1, 1, 9],
        ['in_y', 0, 1, 2],
      ],
      ['second'],
    );
    expect(await readPublishedCounts(database(), 'tn_pub', 'in_x')).toEqual(
      new Map([
        [0, '{"v":5}'],
        [1, '{"v":5}'],
      ]),
    );
    expect(await readPublishedCounts(database(), 'tn_pub', 'in_y')).toEqual(new Map([[0, '{"v":2}']]));
    await publish(['in_x'], [], ['stopped']);
    expect((await readPublishedCounts(database(), 'tn_pub', 'in_x')).size).toBe(0);
    await expect.poll(() => heard).toEqual(['first', 'second', 'stopped']);
  });
});
