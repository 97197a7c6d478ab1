import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listDeadLetters } from '../../server/engine/dead-letter';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { validateWorkflow } from '../../core/model/validate';
import { db, database } from '../helpers/app-db';
import { crowd, restartEngine, send, start, startHarness, steps, workflow, type Harness } from '../fixtures/engine/harness';

// Poison events on a real engine (in this process, so the event loop can be watched): a condition saved before the
// cost rules existed (a nested comprehension the save-time estimate now refuses) and an RE2 match over a 2 MB string
// are stopped by the runtime budget before they run, set aside as dead letters, and never evaluated again.

/** The loop of this process may stall for GC and a busy 2-core machine, never for a condition (9.3 s before). */
const LOOP_BOUND_MS = 500;

const legacy: WorkflowDefinition = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      branches: [
        { condition: 'event.data.a.exists(x, event.data.a.exists(y, x + y == -1.0))', next: 'never' },
        { condition: 'event.data.s.matches("(a+)+$")', next: 'matched' },
        { condition: 'true', next: 'other' },
      ],
    },
    { name: 'never', kind: 'direct' },
    { name: 'matched', kind: 'direct' },
    { name: 'other', kind: 'direct' },
  ],
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ partitions: 2, userBlock: 1 });
});
afterAll(async () => {
  await h?.close();
});

describe('dead letters', () => {
  it('sets aside over-budget events with the reason, moves the partition on, and a restart never evaluates them again', async () => {
    // The save-time estimate would refuse this version; it is stored directly, as an older release saved it.
    expect(validateWorkflow(legacy, { now: Date.now() }).ok).toBe(false);
    expect(validateWorkflow(legacy).ok).toBe(true);
    await crowd(h, 'all', [1, 2, 3, 4]);
    const instanceId = await start(h, await workflow(h, legacy), 'all');
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    await send(h, [
      { user: 1, type: 'e', data: { s: 'a'.repeat(27) + 'b', a: [1, 2, 3] } }, // RE2: no backtracking, no match
      { user: 2, type: 'e', data: { s: 'aaa', a: [] } },
      { user: 3, type: 'e', data: { s: 'a'.repeat(2_000_000) + 'b', a: [] } }, // RE2 over 2 MB: over the budget
      { user: 4, type: 'e', data: { s: 'x', a: Array.from({ length: 5_000 }, (_, i) => i) } }, // 25M iterations
    ]);
    loop.disable();
    expect(loop.max / 1e6).toBeLessThan(LOOP_BOUND_MS);
    expect(await steps(h, instanceId)).toEqual({ entry: 2, never: 0, matched: 1, other: 1 });

    const { deadLetters } = await listDeadLetters(database(), h.tenantId, { limit: 10 });
    expect(deadLetters.map((d) => [d.event.user, d.step, d.instanceId]).sort()).toEqual([
      [3, 'entry', instanceId],
      [4, 'entry', instanceId],
    ]);
    expect(deadLetters.find((d) => d.event.user === 3)!.reason).toMatch(
      /^branches\[1\]\.condition: condition .* would cost [\d,]+ on this event; the runtime budget is 1,000,000 per evaluation$/,
    );
    expect(deadLetters.find((d) => d.event.user === 4)!.reason).toMatch(/^branches\[0\]\.condition: .*runtime budget/);
    // The commit that recorded them moved the offset past them.
    const states = await db().partitionState.findMany({ where: { tenantId: h.tenantId } });
    expect(states.map((s) => Number(s.offset))).toEqual([1, 1]);

    const restartLoop = monitorEventLoopDelay({ resolution: 10 });
    restartLoop.enable();
    await restartEngine(h);
    await h.engine.drain(h.tenantId);
    restartLoop.disable();
    expect(restartLoop.max / 1e6).toBeLessThan(LOOP_BOUND_MS);
    expect(await steps(h, instanceId)).toEqual({ entry: 2, never: 0, matched: 1, other: 1 });
    expect((await listDeadLetters(database(), h.tenantId, { limit: 10 })).deadLetters).toHaveLength(2);
  });
});
