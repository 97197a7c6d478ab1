import { afterEach, describe, expect, it } from 'vitest';
import { instanceFunnel, instancePaths } from '../../server/analytics/instance-analytics';
import { updateTenantLimits } from '../../server/limits/limits';
import { applyJournalRetention } from '../../server/engine/journal-retention';
import { db, database } from '../helpers/app-db';
import type { Tenant } from '../../server/tenants/tenants';
import { openBuyJourney } from '../fixtures/journeys';
import { refusal } from '../helpers/app-error';
import { advance, crowd, range, send, settle, start, startHarness, steps, workflow, type Harness } from '../fixtures/engine/harness';

// Paths and funnels (issue 38 §4) over a journey driven on a ManualClock: events (single moves), the start, branch
// timeouts and hourly timers (bulk moves), a loop back to an earlier step. The test keeps its own record of every
// move it caused, checks that record against the engine's edge counts, and computes each window's edges and funnel
// from it with plain loops.

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const definition = openBuyJourney;

type Move = { user: number; from: string | null; to: string; at: number };

/** Every move the scenario causes, as the test knows them (at: when they happen on the engine clock). */
class MoveRecord {
  readonly moves: Move[] = [];
  private readonly where = new Map<number, string>();
  move(users: number[], to: string, at: number): void {
    for (const user of users) {
      this.moves.push({ user, from: this.where.get(user) ?? null, to, at });
      this.where.set(user, to);
    }
  }
  /** Users now in `step`. */
  in(step: string): number[] {
    return [...this.where].filter(([, at]) => at === step).map(([user]) => user);
  }
  /** Cumulative edge counts in the engine's `from->to` form. */
  edgeCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const m of this.moves) if (m.from !== null) counts[`${m.from}->${m.to}`] = (counts[`${m.from}->${m.to}`] ?? 0) + 1;
    return counts;
  }
  paths(from: number, to: number) {
    const edges = new Map<string, { from: string | null; to: string; moves: number; users: Set<number> }>();
    for (const m of this.moves.filter((m) => m.at >= from && m.at < to)) {
      const key = `${m.from}|${m.to}`;
      if (!edges.has(key)) edges.set(key, { from: m.from, to: m.to, moves: 0, users: new Set() });
      edges.get(key)!.moves++;
      edges.get(key)!.users.add(m.user);
    }
    return [...edges.values()].map((e) => ({ from: e.from, to: e.to, moves: e.moves, users: e.users.size }));
  }
  /** Per funnel step, the users whose moves in the window enter the steps in order (greedy subsequence match). */
  funnel(steps: string[], from: number, to: number): number[] {
    const depth = new Map<number, number>();
    for (const m of this.moves.filter((m) => m.at >= from && m.at < to)) {
      const d = depth.get(m.user) ?? 0;
      if (d < steps.length && steps[d] === m.to) depth.set(m.user, d + 1);
    }
    return steps.map((_, i) => [...depth.values()].filter((d) => d > i).length);
  }
}

let h: Harness;
afterEach(async () => {
  await h.close();
});

const byEdge = <T extends { from: string | null; to: string }>(edges: T[]) => [...edges].sort((a, b) => `${a.from}|${a.to}`.localeCompare(`${b.from}|${b.to}`));
const at = (ms: number) => new Date(ms).toISOString();

async function tenantOf(h: Harness): Promise<Tenant> {
  return (await db().tenant.findUniqueOrThrow({ where: { id: h.tenantId } })) as Tenant;
}

describe('paths and funnels from the journal', () => {
  it('answer what the moves of each window were: single, bulk, timers, timeouts and a loop back', async () => {
    h = await startHarness(4, undefined);
    const record = new MoveRecord();
    const wf = await workflow(h, definition as never);
    const users = range(1, 40);
    await crowd(h, 'all', users);
    const id = await start(h, wf, 'all');
    record.move(users, 'welcome', T0);
    record.move(users, 'wait', T0);

    await advance(h, 10 * MINUTE);
    await send(h, [...range(1, 10).map((user) => ({ user, type: 'open' })), ...range(11, 15).map((user) => ({ user, type: 'buy' }))]);
    record.move(range(1, 10), 'opened', T0 + 10 * MINUTE);
    record.move(range(11, 15), 'bought', T0 + 10 * MINUTE);

    await advance(h, 30 * MINUTE); // 12:40: the 30-minute timeout of those still waiting
    record.move(range(16, 40), 'reminded', T0 + 30 * MINUTE);
    await advance(h, 25 * MINUTE); // 13:05: the hourly timers
    record.move([...range(1, 10), ...range(16, 40)], 'nudge', T0 + 60 * MINUTE);

    await send(h, [
      ...[...range(1, 5), ...range(26, 30)].map((user) => ({ user, type: 'buy' })),
      ...[...range(6, 8), ...range(16, 25)].map((user) => ({ user, type: 'open' })),
    ]);
    record.move([...range(1, 5), ...range(26, 30)], 'bought', T0 + 65 * MINUTE);
    record.move([...range(6, 8), ...range(16, 25)], 'wait', T0 + 65 * MINUTE);

    await advance(h, 45 * MINUTE); // 13:50: the loop's users time out again
    record.move([...range(6, 8), ...range(16, 25)], 'reminded', T0 + 95 * MINUTE);
    await advance(h, 15 * MINUTE); // 14:05: and are nudged again
    record.move([...range(6, 8), ...range(16, 25)], 'nudge', T0 + 120 * MINUTE);
    await send(h, [
      { user: 6, type: 'buy' },
      { user: 16, type: 'buy' },
    ]);
    record.move([6, 16], 'bought', T0 + 125 * MINUTE);

    // The record is what the engine did.
    expect((await h.engine.getCounts(h.tenantId, id)).edges).toEqual(record.edgeCounts());
    expect(await steps(h, id)).toEqual(Object.fromEntries(definition.steps.map((s) => [s.name, record.in(s.name).length])));

    const tenant = await tenantOf(h);
    const now = h.clock.now();
    // Boundaries fall between the moments anything moves (start, 12:10, 12:30-12:40, 13:00, 13:05, 13:30-13:50, 14:00, 14:05).
    // A timer's moves come between its due time and the end of the clock's advance, so the first window ends after now.
    const windows = [
      [T0, now + 1],
      [T0 + 5 * MINUTE, T0 + 50 * MINUTE],
      [T0 + 50 * MINUTE, T0 + 115 * MINUTE],
      [T0 + 115 * MINUTE, now + 1],
    ];
    const funnels = [
      ['welcome', 'wait', 'nudge', 'bought'],
      ['wait', 'nudge', 'wait', 'nudge'],
      ['opened', 'nudge', 'bought'],
      ['reminded', 'bought'],
    ];
    for (const [from, to] of windows) {
      const paths = await instancePaths(database(), tenant, id, { from: at(from), to: at(to) }, now);
      expect(byEdge(paths.edges), `paths ${at(from)} – ${at(to)}`).toEqual(byEdge(record.paths(from, to)));
      for (const steps of funnels) {
        const funnel = await instanceFunnel(database(), tenant, id, { from: at(from), to: at(to), steps }, now);
        const expected = record.funnel(steps, from, to);
        expect(
          funnel.steps.map((s) => s.users),
          `funnel ${steps} ${at(from)} – ${at(to)}`,
        ).toEqual(expected);
        expect(funnel.steps.map((s) => s.conversion)).toEqual(expected.map((n, i) => (i === 0 || expected[i - 1] === 0 ? null : n / expected[i - 1])));
      }
    }
    // The whole run, spelled out once: every user entered; the loop back counts two moves for one user.
    const whole = await instancePaths(database(), tenant, id, {}, now);
    expect(whole.from).toBe(at(T0));
    expect(whole.edges.find((e) => e.from === null)).toEqual({ from: null, to: 'welcome', moves: 40, users: 40 });
    expect(whole.edges.find((e) => e.from === 'reminded' && e.to === 'nudge')).toEqual({ from: 'reminded', to: 'nudge', moves: 38, users: 28 });
    expect((await instanceFunnel(database(), tenant, id, { steps: ['welcome', 'nudge', 'bought'] }, now)).steps).toEqual([
      { step: 'welcome', users: 40, conversion: null, ofFirst: 1 },
      { step: 'nudge', users: 35, conversion: 35 / 40, ofFirst: 35 / 40 },
      { step: 'bought', users: 12, conversion: 12 / 35, ofFirst: 12 / 40 },
    ]);

    // A step the workflow does not have is a 404, like the step export; a window the wrong way round a 400 naming `from`.
    const unknown = await refusal(instanceFunnel(database(), tenant, id, { steps: ['welcome', 'nowhere'] }, now));
    expect([unknown.status, unknown.message]).toEqual([404, `Step "nowhere" of instance ${id} was not found`]);
    const backwards = await refusal(instancePaths(database(), tenant, id, { from: at(now), to: at(T0) }, now));
    expect([backwards.status, (backwards.details as { path: string }).path]).toEqual([400, 'from']);
  });

  it('refuses a window before what retention kept, naming the retained range, and defaults to it', async () => {
    h = await startHarness(2);
    const wf = await workflow(h, {
      steps: [
        { name: 'a', kind: 'timer', cron: '0 0 * * * *', next: 'b' },
        { name: 'b', kind: 'direct' },
      ],
    } as never);
    await crowd(h, 'all', range(1, 10));
    const id = await start(h, wf, 'all');
    await advance(h, 65 * MINUTE); // 13:00: a → b
    await settle(h, h.engine.stopInstance(h.tenantId, id));
    const tenant = await tenantOf(h);
    const all = await instancePaths(database(), tenant, id, {}, h.clock.now());
    expect(byEdge(all.edges)).toEqual(
      byEdge([
        { from: null, to: 'a', moves: 10, users: 10 },
        { from: 'a', to: 'b', moves: 10, users: 10 },
      ]),
    );
    expect(all.retainedFrom).toBeNull();

    // With a one-hour retention, the start's moves (12:00) go at 13:05 while the timer's (13:00) stay.
    await updateTenantLimits(database(), h.tenantId, { journalRetentionHours: 1 });
    expect(await applyJournalRetention(database(), h.clock)).toBeGreaterThan(0);
    const now = h.clock.now();
    // The timer's moves (due at 13:00, made by 13:05) are what is left.
    const kept = Number((await db().journal.findFirstOrThrow({ where: { instanceId: id, fromStep: 'a' } })).timeMs);
    const refused = await refusal(instancePaths(database(), tenant, id, { from: at(T0) }, now));
    expect(refused.status).toBe(422);
    expect(refused.code).toBe('outside_retention');
    expect(refused.details).toEqual({ path: 'from', retainedFrom: at(kept), retainedTo: at(now) });
    expect(refused.message).toContain(`from ${at(kept)} to now`);
    const funnelRefused = await refusal(instanceFunnel(database(), tenant, id, { from: at(T0), steps: ['a', 'b'] }, now));
    expect(funnelRefused.code).toBe('outside_retention');
    const retained = await instancePaths(database(), tenant, id, {}, now);
    expect([retained.from, retained.retainedFrom]).toEqual([at(kept), at(kept)]);
    expect(retained.edges).toEqual([{ from: 'a', to: 'b', moves: 10, users: 10 }]);
  });
});
