import { afterEach, expect, it } from 'vitest';
import { instanceRowsDominate } from '../../server/storage/journal/replay';
import { database } from '../helpers/app-db';
import { crowd, range, send, start, startHarness, workflow, type Harness } from '../fixtures/engine/harness';

// Recovery reads one instance's journal in one pass in seq order only when its rows are at least half of the journal
// after the checkpoint (server/engine/recovery.ts), judged by the rows of a bounded window of seqs after it.
let h: Harness | undefined;
const newestSeq = async () =>
  (await (await database().raw()).query<{ s: unknown }>(`SELECT COALESCE(MAX("seq"), 0) AS s FROM ${database().dialect.table('Journal')}`, []))[0];
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it("chooses one pass over the journal for the instance whose rows are at least half of it, and not for the other's", async () => {
  h = await startHarness({ partitions: 2, userBlock: 1 });
  const definition = {
    steps: [
      { name: 'entry', kind: 'branch' as const, branches: [{ condition: 'event.type == "go"', next: 'done' }] },
      { name: 'done', kind: 'direct' as const },
    ],
  };
  await crowd(h, 'many', range(1, 100));
  await crowd(h, 'few', range(1, 10));
  const { s: before } = await newestSeq();
  const busy = await start(h, await workflow(h, definition), 'many');
  const quiet = await start(h, await workflow(h, definition), 'few');
  // Each user's event moves them in every instance holding them: 100 rows of the busy instance, 10 of the quiet one.
  await send(
    h,
    range(1, 100).map((user) => ({ user, type: 'go' })),
  );
  const seq = Number(before);
  expect(await instanceRowsDominate(database(), h.tenantId, busy, seq)).toBe(true);
  expect(await instanceRowsDominate(database(), h.tenantId, quiet, seq)).toBe(false);
  // Nothing after the newest row: no pass to choose.
  const { s: newest } = await newestSeq();
  expect(await instanceRowsDominate(database(), h.tenantId, busy, Number(newest))).toBe(false);
});
