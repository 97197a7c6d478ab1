import { afterEach, expect, it, vi } from 'vitest';
import { app } from '../../server/app';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { database } from '../helpers/app-db';
import { appendEvents } from '../../server/engine/ingest';
import { SLICE_MS } from '../../server/engine/slices';
import { withTransactionHook } from '../helpers/raw-hook';
import { crowd, range, startHarness, steps, start, workflow, type Harness } from '../fixtures/engine/harness';

// A partition applies up to 32 log rows of 10,000 events at once; with a costly condition (a regex over a
// long string, within the save budget) that was one block of the engine thread that every tenant shares
// (issue 34: another tenant's event waited 2.3-2.8 s behind such batches). The apply now yields every SLICE_MS.

const EVENTS = 300;
const definition: WorkflowDefinition = {
  steps: [
    { name: 'entry', kind: 'branch', branches: [{ condition: 'event.data.s.matches(".{200}z")', next: 'done' }] },
    { name: 'done', kind: 'direct' },
  ],
};

let h: Harness;
afterEach(async () => h?.close());

it('applying a batch of costly events yields the thread between slices instead of holding it', async () => {
  let committedAt = 0;
  const hooked = withTransactionHook(database(), async (statements, commit) => {
    const result = await commit();
    if (!committedAt && statements.some((s) => s.sql.includes('INSERT INTO') && s.sql.includes('Journal'))) committedAt = performance.now();
    return result;
  });
  h = await startHarness(1, undefined, { database: hooked });
  const wf = await workflow(h, definition);
  await crowd(h, 'everyone', range(1, EVENTS));
  const instanceId = await start(h, wf, 'everyone');
  const s = `${'a'.repeat(299)}z`;
  // Appended without waking the partition (send() would), so the test's own encoding is not timed below.
  for (let from = 1; from <= EVENTS; from += 100) {
    const events = range(from, from + 99).map((user) => ({ user, type: 'visit', data: { s }, time: h.clock.now() }));
    await appendEvents(database(), app().state, h.tenantId, events);
  }
  committedAt = 0;

  // Every turn the batch's apply waits for between two slices, and whether other work ran in between: a chain of
  // event-loop turns queued outside the engine, which a batch held in one block would starve until it committed.
  const startedAt = performance.now();
  const yields: number[] = [];
  let outsideTurns = 0;
  const next = h.engine.turns.next.bind(h.engine.turns);
  const spy = vi.spyOn(h.engine.turns, 'next').mockImplementation((tenant) => {
    if (tenant === h.tenantId && !committedAt) yields.push(outsideTurns);
    return next(tenant);
  });
  const outside = new Promise<void>((resolve) => {
    const turn = () => {
      outsideTurns++;
      if (committedAt) resolve();
      else setImmediate(turn);
    };
    setImmediate(turn);
  });
  h.engine.wakeTenant(h.tenantId);
  await outside;
  spy.mockRestore();
  const applying = committedAt - startedAt;

  expect(await steps(h, instanceId)).toEqual({ entry: 0, done: EVENTS });
  // The work must be long enough to tell one block from slices: many slices of it.
  expect(applying, 'the batch took too little time to show slicing').toBeGreaterThan(8 * SLICE_MS);
  // Counted in turns, not milliseconds, so a loaded machine pausing the process does not decide the outcome.
  expect(yields.length, `turns the apply waited for in ${applying.toFixed(1)} ms`).toBeGreaterThanOrEqual(3);
  const outsideBetween = yields.slice(1).map((at, i) => at - yields[i]);
  expect(
    outsideBetween.every((n) => n >= 1),
    `outside turns between the apply's slices: ${outsideBetween.join(', ')}`,
  ).toBe(true);
});
