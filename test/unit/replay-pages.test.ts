// A replay reads the journal in pages, and other work gets a turn of the event loop between two of them. On SQLite the
// driver is synchronous, so an await of its query resolves at once: pages that only awaited the query followed each
// other in one block (a restart's replay of 1M moves held every other tenant's work for its whole length).
import { expect, it } from 'vitest';
import { journalAfter, USER } from '../../server/storage/journal/replay';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { loopTurns } from '../helpers/loop-turns';

const ROWS = 10_000; // three pages of 4,096 (replay.ts PAGE_SIZE)

it('gives the event loop a turn between two pages of a replay', async () => {
  const tenantId = newId('tn');
  const instanceId = newId('in');
  const newest = await db().journal.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
  const first = Number(newest?.seq ?? 0n) + 1;
  await db().journal.createMany({
    data: Array.from({ length: ROWS }, (_, i) => ({
      seq: BigInt(first + i),
      tenantId,
      instanceId,
      partition: 0,
      fromStep: 'a',
      toStep: 'b',
      user: BigInt(i),
      count: 1n,
      timeMs: BigInt(i),
    })),
  });

  const turns = loopTurns();
  const turnsAtRow: number[] = [];
  const users: number[] = [];
  await journalAfter(database(), tenantId, instanceId, 0, first - 1, (row) => {
    turnsAtRow.push(turns.count);
    users.push(Number(row[USER]));
  });
  turns.stop();

  expect(users).toEqual(Array.from({ length: ROWS }, (_, i) => i));
  // Rows of the three pages were visited in (at least) three turns of the loop, not all in the turn the replay began in.
  expect(new Set(turnsAtRow).size).toBeGreaterThanOrEqual(3);
});
