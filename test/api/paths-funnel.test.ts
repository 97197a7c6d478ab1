import { describe, expect, it } from 'vitest';
import { openBuySkipJourney as definition } from '../fixtures/journeys';
import { api, createTenant, expectError } from '../helpers/api';

// Paths and funnels over HTTP (issue 38 §4): a journey driven by posted events, its moves kept by the test as it
// causes them, and the answers compared with edges and funnels computed from that record with plain loops.

type Move = { user: number; from: string | null; to: string; batch: number };

class MoveRecord {
  readonly moves: Move[] = [];
  private readonly where = new Map<number, string>();
  move(users: number[], to: string, batch: number): void {
    for (const user of users) {
      this.moves.push({ user, from: this.where.get(user) ?? null, to, batch });
      this.where.set(user, to);
    }
  }
  edgeCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const m of this.moves) if (m.from !== null) counts[`${m.from}->${m.to}`] = (counts[`${m.from}->${m.to}`] ?? 0) + 1;
    return counts;
  }
  paths(fromBatch: number) {
    const edges = new Map<string, { from: string | null; to: string; moves: number; users: Set<number> }>();
    for (const m of this.moves.filter((m) => m.batch >= fromBatch)) {
      const key = `${m.from}|${m.to}`;
      if (!edges.has(key)) edges.set(key, { from: m.from, to: m.to, moves: 0, users: new Set() });
      edges.get(key)!.moves++;
      edges.get(key)!.users.add(m.user);
    }
    return sorted([...edges.values()].map((e) => ({ from: e.from, to: e.to, moves: e.moves, users: e.users.size })));
  }
  funnel(steps: string[], fromBatch: number): number[] {
    const depth = new Map<number, number>();
    for (const m of this.moves.filter((m) => m.batch >= fromBatch)) {
      const d = depth.get(m.user) ?? 0;
      if (d < steps.length && steps[d] === m.to) depth.set(m.user, d + 1);
    }
    return steps.map((_, i) => [...depth.values()].filter((d) => d > i).length);
  }
}

const sorted = <T extends { from: string | null; to: string }>(edges: T[]) => [...edges].sort((a, b) => `${a.from}|${a.to}`.localeCompare(`${b.from}|${b.to}`));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('paths and funnels', () => {
  it('answer the edges and the funnel of the moves the posted events caused, in a window too', async () => {
    const tenant = await createTenant(4);
    const base = `/tenants/${tenant.name}`;
    const as = { token: tenant.key };
    expect((await api('PUT', `${base}/crowds/c`, { body: range(1, 30).join('\n'), headers: { 'content-type': 'text/plain' } })).status).toBe(201);
    const created = await api('POST', `${base}/workflows`, { body: { name: 'paths', definition } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const iid: string = (await api('POST', `${base}/workflows/${created.body.id}/start`, { body: { crowd: 'c' } })).body.instanceId;
    await expect.poll(async () => (await api('GET', `${base}/instances/${iid}`)).body.state, { timeout: 20_000 }).toBe('running');
    const record = new MoveRecord();
    record.move(range(1, 30), 'start', 0);
    record.move(range(1, 30), 'wait', 0);

    const post = async (events: { user: number; type: string }[]) => {
      expect((await api('POST', '/events', { body: { events }, ...as })).status).toBe(202);
      await expect.poll(async () => (await api('GET', `${base}/instances/${iid}/counts`, as)).body.edges, { timeout: 20_000 }).toEqual(record.edgeCounts());
    };
    record.move(range(1, 12), 'opened', 1);
    record.move(range(13, 16), 'bought', 1);
    await post([...range(1, 12).map((user) => ({ user, type: 'open' })), ...range(13, 16).map((user) => ({ user, type: 'buy' }))]);
    // Every move after this moment is of the later batches (the engine stamps moves with its clock when it applies them).
    const between = new Date().toISOString();
    record.move(range(1, 5), 'bought', 2);
    record.move(range(6, 9), 'wait', 2);
    await post([...range(1, 5).map((user) => ({ user, type: 'buy' })), ...range(6, 9).map((user) => ({ user, type: 'skip' }))]);
    record.move([6, 7], 'opened', 3);
    record.move([8], 'bought', 3);
    record.move([6], 'bought', 3);
    await post([
      { user: 6, type: 'open' },
      { user: 7, type: 'open' },
      { user: 8, type: 'buy' },
      { user: 6, type: 'buy' },
    ]);

    const paths = await api('GET', `${base}/instances/${iid}/paths`, as);
    expect(paths.status, JSON.stringify(paths.body)).toBe(200);
    expect(sorted(paths.body.edges)).toEqual(record.paths(0));
    expect(paths.body.retainedFrom).toBeNull();
    const later = await api('GET', `${base}/instances/${iid}/paths?from=${encodeURIComponent(between)}`, as);
    expect(later.body.from).toBe(between);
    expect(sorted(later.body.edges)).toEqual(record.paths(2));
    expect(record.paths(2).find((e) => e.from === 'wait' && e.to === 'opened')).toEqual({
      from: 'wait',
      to: 'opened',
      moves: 2,
      users: 2,
    });

    for (const steps of [
      ['start', 'wait', 'opened', 'bought'],
      ['wait', 'opened', 'wait', 'opened'],
      ['opened', 'bought'],
    ]) {
      for (const [fromBatch, query] of [
        [0, ''],
        [2, `&from=${encodeURIComponent(between)}`],
      ] as const) {
        const funnel = await api('GET', `${base}/instances/${iid}/funnel?steps=${steps.join(',')}${query}`, as);
        expect(funnel.status, JSON.stringify(funnel.body)).toBe(200);
        const expected = record.funnel(steps, fromBatch);
        expect(
          funnel.body.steps.map((s: { step: string; users: number }) => [s.step, s.users]),
          `${steps} from batch ${fromBatch}`,
        ).toEqual(steps.map((step, i) => [step, expected[i]]));
      }
    }
    const funnel = await api('GET', `${base}/instances/${iid}/funnel?steps=start,opened,bought`, as);
    expect(funnel.body.steps).toEqual([
      { step: 'start', users: 30, conversion: null, ofFirst: 1 },
      { step: 'opened', users: 12, conversion: 12 / 30, ofFirst: 12 / 30 },
      { step: 'bought', users: 7, conversion: 7 / 12, ofFirst: 7 / 30 },
    ]);

    // Bad input: each a 4xx naming what is wrong.
    const at = `${base}/instances/${iid}`;
    expect(expectError(await api('GET', `${at}/paths?from=yesterday`, as), 400, 'validation_failed').message).toMatch(/^from: /);
    expect(expectError(await api('GET', `${at}/paths?to=2026-13-01T00:00:00Z`, as), 400, 'validation_failed').message).toMatch(/^to: /);
    const backwards = expectError(await api('GET', `${at}/paths?from=${encodeURIComponent(between)}&to=2020-01-01T00:00:00Z`, as), 400, 'bad_request');
    expect(backwards.message).toMatch(/^from \(/);
    expect(expectError(await api('GET', `${at}/paths?form=x`, as), 400, 'validation_failed').message).toContain('form');
    expect(expectError(await api('GET', `${at}/funnel?steps=start,nowhere`, as), 404, 'not_found').message).toBe(
      `Step "nowhere" of instance ${iid} was not found`,
    );
    expect(expectError(await api('GET', `${at}/funnel?steps=start`, as), 400, 'validation_failed').message).toMatch(/^steps: /);
    expect(expectError(await api('GET', `${at}/funnel?steps=start,,bought`, as), 400, 'validation_failed').message).toMatch(/^steps\.1: a step name is empty/);
    expect(expectError(await api('GET', `${at}/funnel`, as), 400, 'validation_failed').message).toMatch(/^steps: /);
    expectError(await api('GET', `${base}/instances/nope/paths`, as), 404, 'not_found');
    expectError(await api('GET', `${base}/instances/nope/funnel?steps=a,b`, as), 404, 'not_found');
  });
});
