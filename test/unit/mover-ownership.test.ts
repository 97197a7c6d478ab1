import { describe, expect, it } from 'vitest';
import { WorkflowDefinition } from '../../core/model/workflow';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import type { EntryRouting } from '../../server/engine/entry-routing';
import { EXITED } from '../../server/engine/exit';
import { Mover } from '../../server/engine/moves';
import { splitByPartition } from '../../server/engine/partitioning';
import { WorkflowRuntime } from '../../server/engine/runtime';
import { Shard } from '../../server/engine/shard';
import type { JournalMove } from '../../server/storage/journal/commit';

// The Mover frees the bitmaps of a bulk move it made itself (issue 37: left to V8, a 10M-user start's temporaries set
// off major collections), and only those: the caller's users, and everything the shard and the journal keep, stay
// whole. A bitmap freed too early reads as empty, so the exact steps and journal below would show it.

/** Entry: exit criteria, then a branch routing on entry, then a split: every kind of group the Mover makes. */
const DEFINITION = WorkflowDefinition.parse({
  exit: { condition: 'user % 7 == 0' },
  steps: [
    {
      name: 'route',
      kind: 'branch',
      branches: [
        { condition: 'user < 300', next: 'low' },
        { condition: 'user < 600', next: 'ab' },
        { condition: 'user > 900', next: 'route' },
      ],
    },
    { name: 'low', kind: 'direct' },
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 50, next: 'a' },
        { percent: 50, next: 'b' },
      ],
    },
    { name: 'a', kind: 'direct' },
    { name: 'b', kind: 'direct' },
  ],
});

/**
 * Routes and exits by the same rules as DEFINITION's conditions, and records every bitmap it hands out with how often
 * it was freed (roaring's dispose() is wrapped per bitmap).
 */
function countingRouting() {
  const handedOut: { bitmap: RoaringBitmap32; freed: number }[] = [];
  const handOut = (bitmap: RoaringBitmap32) => {
    const entry = { bitmap, freed: 0 };
    const dispose = bitmap.dispose.bind(bitmap);
    bitmap.dispose = () => {
      entry.freed++;
      return dispose();
    };
    handedOut.push(entry);
    return bitmap;
  };
  const where = (users: RoaringBitmap32, test: (user: number) => boolean) => RoaringBitmap32.from(users.toArray().filter(test));
  const routing: EntryRouting = {
    route(_runtime, users) {
      const rest = users.clone();
      const taken = [(u: number) => u < 300, (u: number) => u < 600, (u: number) => u > 900].map((test) => {
        const matched = where(rest, test);
        rest.andNotInPlace(matched);
        return handOut(matched);
      });
      return { taken, rest: handOut(rest) };
    },
    exiting: (users) => handOut(where(users, (u) => u % 7 === 0)),
    prepare: async () => undefined,
  };
  return { routing, handedOut };
}

const range = (from: number, to: number) => RoaringBitmap32.fromRange(from, to);
const ids = (bitmap: RoaringBitmap32 | undefined) => bitmap?.toArray() ?? [];

describe('the Mover frees what it made, and only that', () => {
  it('a bulk move through exit criteria, a routing branch and a split: caller, shard and journal intact, every group freed once', () => {
    const workflow = new WorkflowRuntime(DEFINITION, 'wf_owner');
    const shard = new Shard('in_owner', 0);
    const moves: JournalMove[] = [];
    const { routing, handedOut } = countingRouting();
    const users = range(0, 1000);
    new Mover(workflow, shard, moves, 1_000, routing).moveBulk(users, null, workflow.entry);

    expect(ids(users)).toEqual(ids(range(0, 1000))); // the caller's
    const all = range(0, 1000).toArray();
    const staying = all.filter((u) => u % 7 !== 0);
    expect(ids(shard.exited.get('route'))).toEqual(all.filter((u) => u % 7 === 0));
    expect(ids(shard.steps.get('low'))).toEqual(staying.filter((u) => u < 300));
    expect(ids(shard.steps.get('route'))).toEqual(staying.filter((u) => u >= 600));
    const split = [...ids(shard.steps.get('a')), ...ids(shard.steps.get('b'))].sort((x, y) => x - y);
    expect(split).toEqual(staying.filter((u) => u >= 300 && u < 600));
    expect(ids(shard.steps.get('a')).length).toBeGreaterThan(50);
    expect(ids(shard.steps.get('b')).length).toBeGreaterThan(50);

    // Each journal row's bitmap is what moved: serialized before its group was freed.
    const journaled = (from: string | null, to: string) => {
      const row = moves.find((m) => m.fromStep === from && m.toStep === to);
      return row?.bitmap ? RoaringBitmap32.deserialize(row.bitmap, 'portable').toArray() : [];
    };
    expect(journaled(null, EXITED)).toEqual(ids(shard.exited.get('route')));
    expect(journaled(null, 'route')).toEqual(staying);
    expect(journaled('route', 'ab')).toEqual(split);
    expect(journaled('ab', 'a')).toEqual(ids(shard.steps.get('a')));
    expect(moves.filter((m) => m.toStep === 'route' && m.fromStep === 'route')).toEqual([]); // back to itself: no move

    // Exit criteria once, routing once: every bitmap routing handed out was freed exactly once.
    expect(handedOut).toHaveLength(5);
    expect(handedOut.map((h) => h.freed)).toEqual([1, 1, 1, 1, 1]);
  });

  it('one user routes by the same plans and its one-user bitmaps are freed', () => {
    const workflow = new WorkflowRuntime(DEFINITION, 'wf_owner');
    const shard = new Shard('in_owner', 0);
    const { routing, handedOut } = countingRouting();
    expect(new Mover(workflow, shard, [], 1_000, routing).moveUser(450, null, workflow.entry)).toMatch(/^[ab]$/);
    expect(handedOut.map((h) => h.freed)).toEqual([1, 1, 1, 1]);
  });

  it('splitByPartition: the parts are new bitmaps (freeing one leaves the users and the other parts whole)', () => {
    const users = range(0, 100_000);
    const split = splitByPartition(users, { partitions: 4, userBlock: 1 });
    const parts = [0, 1, 2, 3].map((p) => split(p));
    parts[0].dispose();
    expect(users.size).toBe(100_000);
    expect(parts.slice(1).map((part) => part.size)).toEqual([25_000, 25_000, 25_000]);
    expect(parts[2].toArray().every((u) => u % 4 === 2)).toBe(true);
    expect(splitByPartition(users, { partitions: 1, userBlock: 1 })(0)).toBe(users); // one partition: the users themselves (the caller keeps them)
  });
});
