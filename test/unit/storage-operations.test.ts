import { describe, expect, it } from 'vitest';
import { database } from '../helpers/app-db';
import { bulkMovesAfter, singleMovesByEdge, singleMovesInto } from '../../server/storage/journal-moves';
import { firstEntryTimeAfter, trimJournalChunk, trimmedThrough } from '../../server/storage/journal-trim';
import { claimProcedures } from '../../server/storage/procedure-claims';
import { lockedProfileWrite } from '../../server/storage/profile-merges';
import { eachProfilePage, profilesOf } from '../../server/storage/profile-reads';
import { readLimitOverrides, writeLimitOverrides } from '../../server/storage/tenant-limits';

// The contract of the storage operations that server/limits/, notifications/, analytics/, procedures/ and profiles/
// build on, the same on SQLite and PostgreSQL (each provider's project runs this file).

const db = () => database().db;
const tenant = (id: string) => db().tenant.create({ data: { id, name: id, partitions: 2 } });

type Move = { seq: number; partition?: number; user?: number; from?: string; to: string; timeMs: number; bitmap?: Uint8Array<ArrayBuffer> };
const journal = (tenantId: string, instanceId: string, moves: Move[]) =>
  db().journal.createMany({
    data: moves.map((move) => ({
      seq: BigInt(move.seq),
      tenantId,
      instanceId,
      partition: move.partition ?? 0,
      fromStep: move.from ?? null,
      toStep: move.to,
      user: move.user === undefined ? null : BigInt(move.user),
      bitmap: move.bitmap ?? null,
      count: BigInt(move.user === undefined ? 5 : 1),
      timeMs: BigInt(move.timeMs),
    })),
  });

describe('storage operations', () => {
  it('tenant limits: the overrides read back as written, replaced whole', async () => {
    await tenant('tn_limits');
    expect(await readLimitOverrides(database(), 'tn_limits')).toBeUndefined();
    await writeLimitOverrides(database(), 'tn_limits', '{"maxCrowdUsers":10}');
    await writeLimitOverrides(database(), 'tn_limits', '{"journalMaxRows":2000}');
    expect(await readLimitOverrides(database(), 'tn_limits')).toBe('{"journalMaxRows":2000}');
  });

  it('journal trim: deletes in chunks under a rising watermark, keeping the newest entry and what a running instance needs', async () => {
    await tenant('tn_trim');
    await db().instance.create({
      data: { id: 'in_run', tenantId: 'tn_trim', workflowId: 'wf', version: 1, crowdName: 'c', state: 'running', userCount: 1n },
    });
    await db().shardCheckpoint.create({ data: { tenantId: 'tn_trim', instanceId: 'in_run', partition: 0, journalSeq: 3n, data: new Uint8Array() } });
    await journal(
      'tn_trim',
      'in_old',
      [1, 2, 3, 4].map((seq) => ({ seq, user: seq, to: 'a', timeMs: seq * 10 })),
    );
    await journal(
      'tn_trim',
      'in_run',
      [5, 6].map((seq) => ({ seq, user: seq, to: 'a', timeMs: seq * 10 })),
    );
    await journal('tn_trim', 'in_old', [{ seq: 7, user: 7, to: 'a', timeMs: 70 }]);
    expect(await trimmedThrough(database(), 'tn_trim')).toBe(0);

    const trim = { tenantId: 'tn_trim', olderThan: 1_000, throughSeq: null, runningStates: ['running'], limit: 3 };
    expect(await trimJournalChunk(database(), trim)).toBe(3);
    expect(await trimmedThrough(database(), 'tn_trim')).toBe(3);
    expect(await trimJournalChunk(database(), trim)).toBe(1); // 5 and 6 are past the running instance's checkpoint; 7 is the newest
    expect(await trimJournalChunk(database(), trim)).toBe(0);
    expect(await trimmedThrough(database(), 'tn_trim')).toBe(4);
    expect((await db().journal.findMany({ where: { tenantId: 'tn_trim' }, orderBy: { seq: 'asc' } })).map((row) => Number(row.seq))).toEqual([5, 6, 7]);
    expect(await firstEntryTimeAfter(database(), 'tn_trim', 4)).toBe(50);
    expect(await firstEntryTimeAfter(database(), 'tn_trim', 7)).toBeUndefined();

    // By size: entries at or below throughSeq go whatever their age; an instance in no running state keeps none.
    const bySize = { ...trim, olderThan: 0, throughSeq: 6, runningStates: ['stopping'] };
    expect(await trimJournalChunk(database(), bySize)).toBe(2);
    expect(await trimmedThrough(database(), 'tn_trim')).toBe(6);
  });

  it('journal moves: a partition window’s single moves by edge and coded by step, and its bulk moves, after a seq', async () => {
    await tenant('tn_moves');
    const bitmap = new Uint8Array([1, 2, 3]);
    await journal('tn_moves', 'in_m', [
      { seq: 101, user: 4, to: 'a', timeMs: 100 },
      { seq: 102, user: 6, from: 'a', to: 'b', timeMs: 110 },
      { seq: 103, to: 'b', from: 'a', timeMs: 120, bitmap },
      { seq: 104, user: 8, from: 'a', to: 'b', timeMs: 130 },
      { seq: 105, user: 9, partition: 1, to: 'a', timeMs: 130 },
      { seq: 106, user: 2, to: 'a', timeMs: 500 },
    ]);
    const window = { tenantId: 'tn_moves', instanceId: 'in_m', partition: 0, from: 100, to: 200 };
    const edges = await singleMovesByEdge(database(), window, 0, 100);
    expect(edges.sort((x, y) => x.toStep.localeCompare(y.toStep))).toEqual([
      { fromStep: null, toStep: 'a', moves: 1, lastSeq: 101, users: '4' },
      { fromStep: 'a', toStep: 'b', moves: 2, lastSeq: 104, users: expect.stringMatching(/^(6,8|8,6)$/) },
    ]);
    expect((await singleMovesByEdge(database(), window, 0, 1)).map((edge) => edge.lastSeq)).toEqual([101]);
    // user × 2 + the step's place in ['a', 'b'], in seq order.
    expect(await singleMovesInto(database(), window, ['a', 'b'], 0, Number.POSITIVE_INFINITY, 100)).toEqual({ moves: 3, lastSeq: 104, codes: '8,13,17' });
    expect(await singleMovesInto(database(), window, ['b'], 101, 104, 100)).toEqual({ moves: 1, lastSeq: 102, codes: '6' });
    expect((await singleMovesInto(database(), window, ['a'], 200, Number.POSITIVE_INFINITY, 100)).moves).toBe(0);
    const [bulk, ...none] = await bulkMovesAfter(database(), window, undefined, 0, 16);
    expect([bulk.seq, bulk.fromStep, bulk.toStep, bulk.count, [...bulk.bitmap], none]).toEqual([103, 'a', 'b', 5, [1, 2, 3], []]);
    expect(await bulkMovesAfter(database(), window, ['a'], 0, 16)).toEqual([]);
    expect(await bulkMovesAfter(database(), window, ['b'], 103, 16)).toEqual([]);
  });

  it('profile merges: read, upsert and delete in one counted write; a throw writes and counts nothing', async () => {
    await tenant('tn_prof');
    const first = await lockedProfileWrite(database(), 'tn_prof', async (profiles) => {
      expect(await profiles.read([1, 2])).toEqual(new Map());
      await profiles.upsert(
        Array.from({ length: 1_500 }, (_, user): [number, string] => [user, `{"n":${user}}`]),
        new Date(),
      );
      return { wrote: 1_500 };
    });
    expect(first).toEqual({ wrote: 1_500, seq: 1 });
    const second = await lockedProfileWrite(database(), 'tn_prof', async (profiles) => {
      const found = await profiles.read([3, 1_499, 5_000]);
      await profiles.delete(3);
      await profiles.upsert([[1_499, '{"n":"last"}']], new Date());
      return { found };
    });
    expect(second).toEqual({
      found: new Map([
        [3, '{"n":3}'],
        [1_499, '{"n":1499}'],
      ]),
      seq: 2,
    });
    await expect(
      lockedProfileWrite(database(), 'tn_prof', async (profiles) => {
        await profiles.delete(4);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await profilesOf(database(), 'tn_prof', [3, 4, 1_499])).toEqual(
      new Map([
        [4, '{"n":4}'],
        [1_499, '{"n":"last"}'],
      ]),
    );
    expect((await db().profileIndexState.findUnique({ where: { tenantId: 'tn_prof' } }))?.seq).toBe(2n);

    const pages: number[][] = [];
    await eachProfilePage(database(), 'tn_prof', 1_000, (rows) => pages.push(rows.map((row) => row.user)));
    expect(pages.map((page) => page.length)).toEqual([1_000, 499]);
    expect(pages.flat()).toEqual(Array.from({ length: 1_500 }, (_, user) => user).filter((user) => user !== 3));
  });

  it('procedure claims: the chosen unfinished procedures are taken for the owner and read back in the chosen order', async () => {
    const procedure = (id: string, owner: string | null, state = 'running', parentId: string | null = null) => ({
      id,
      type: 'test',
      parentId,
      lockKeys: '[]',
      state,
      data: '{}',
      owner,
    });
    await db().procedure.createMany({
      data: [
        procedure('pr_a', null),
        procedure('pr_b', 'gone'),
        procedure('pr_c', null),
        procedure('pr_done', null, 'done'),
        procedure('pr_child', null, 'running', 'pr_b'),
      ],
    });
    let queued: string[] = [];
    const claim = await claimProcedures(database(), 'runner-1', Date.now(), (unfinished) => {
      queued = unfinished.map((row) => row.id).sort();
      return unfinished.filter((row) => row.id === 'pr_b' || row.id === 'pr_a').sort((x, y) => y.id.localeCompare(x.id));
    });
    expect(queued).toEqual(['pr_a', 'pr_b', 'pr_c', 'pr_child']);
    expect(claim.claimed.map((row) => [row.id, row.owner, row.state])).toEqual([
      ['pr_b', 'runner-1', 'running'],
      ['pr_a', 'runner-1', 'running'],
    ]);
    expect(claim.withChildren).toEqual(new Set(['pr_b']));
    expect((await db().procedure.findUnique({ where: { id: 'pr_c' } }))?.owner).toBeNull();
  });
});
