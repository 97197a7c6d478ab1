import { afterEach, describe, expect, it } from 'vitest';
import { countsHistory, CountsSampler, downsampleCountsHistory, HOUR_MS, MINUTE_MS } from '../../server/engine/counts-history';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { db, database } from '../helpers/app-db';
import { advance, crowd, range, send, start, startHarness, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const definition: WorkflowDefinition = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '7d', next: 'lapsed' } },
    { name: 'bought', kind: 'direct' },
    { name: 'lapsed', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "purchase"' },
};

describe('counts history', () => {
  it('samples on its own at each minute of the engine clock, moved by the test (no real time passes)', async () => {
    h = await startHarness(1);
    await crowd(h, 'c', range(1, 3));
    const id = await start(h, await workflow(h, definition), 'c');
    await advance(h, 0); // a new instance is sampled at once
    const samples = () => db().countsSample.count({ where: { instanceId: id } });
    expect(await samples()).toBe(1);
    // Neither the timer loop (its next timer is 7 days away) nor the test runs the timers: the sampler wakes by itself.
    await h.clock.advance(MINUTE_MS);
    await h.engine.countsSamplerSettled();
    expect(await samples()).toBe(2);
    await h.clock.advance(MINUTE_MS / 2);
    await h.engine.countsSamplerSettled();
    expect(await samples()).toBe(2);
  });

  it('samples each running instance once a minute of the engine clock, reads buckets, downsamples after 2 days', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', range(1, 10));
    const id = await start(h, await workflow(h, definition), 'c');
    const t0 = Math.floor(h.clock.now() / MINUTE_MS) * MINUTE_MS;
    await advance(h, 0); // a new instance is sampled at once
    await advance(h, 30_000); // same minute: no second sample
    expect(await db().countsSample.count({ where: { instanceId: id } })).toBe(1);

    await send(
      h,
      [1, 2, 3].map((user) => ({ user, type: 'purchase' })),
    );
    await advance(h, 30_000); // the next minute
    await send(h, [{ user: 4, type: 'purchase' }]);
    await advance(h, MINUTE_MS);
    const read = (query: Partial<Parameters<typeof countsHistory>[3]>) =>
      countsHistory(
        database(),
        h!.tenantId,
        id,
        { resolution: 'minute', from: new Date(t0).toISOString(), to: new Date(h!.clock.now()).toISOString(), ...query },
        h!.clock.now(),
      );
    const minutes = await read({});
    expect(minutes.points.map((p) => [p.at, p.steps.wait, p.steps.bought, p.converted])).toEqual([
      [new Date(t0).toISOString(), 10, 0, 0],
      [new Date(t0 + MINUTE_MS).toISOString(), 7, 3, 3],
      [new Date(t0 + 2 * MINUTE_MS).toISOString(), 6, 4, 4],
    ]);
    expect((await read({ step: 'bought' })).points.map((p) => p.steps)).toEqual([{ bought: 0 }, { bought: 3 }, { bought: 4 }]);
    expect((await read({ resolution: 'hour' })).points).toMatchObject([
      { at: new Date(Math.floor(t0 / HOUR_MS) * HOUR_MS).toISOString(), steps: { bought: 4 } },
    ]);

    // Three days on (the timer loop may have sampled on its way, hourly): minute samples older than 2 days are gone,
    // turned into one sample an hour, the hour's last.
    await advance(h, 3 * 24 * HOUR_MS);
    await downsampleCountsHistory(database(), h.clock.now());
    const cutoff = BigInt(h.clock.now() - 2 * 24 * HOUR_MS);
    expect(await db().countsSample.count({ where: { instanceId: id, resolution: MINUTE_MS, at: { lt: cutoff } } })).toBe(0);
    const firstHour = await db().countsSample.findUnique({
      where: {
        tenantId_instanceId_resolution_at: { tenantId: h.tenantId, instanceId: id, resolution: HOUR_MS, at: BigInt(Math.floor(t0 / HOUR_MS) * HOUR_MS) },
      },
    });
    expect(JSON.parse(firstHour!.counts)).toMatchObject({ steps: { wait: 6, bought: 4 }, converted: 4 });
    const all = await read({ resolution: 'hour' });
    expect(all.points[0].at).toBe(new Date(Math.floor(t0 / HOUR_MS) * HOUR_MS).toISOString());
    expect(all.points.every((p) => p.steps.bought === 4)).toBe(true);
    expect(all.points.at(-1)!.at).toBe(new Date(Math.floor(h.clock.now() / HOUR_MS) * HOUR_MS).toISOString());

    await expect(read({ from: new Date(h.clock.now()).toISOString() })).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^from .* must be before to/),
    });
    await expect(read({ resolution: 'minute', from: new Date(t0 - 30 * 24 * HOUR_MS).toISOString() })).rejects.toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^resolution: .* exceed 10080 points/),
    });
    await expect(countsHistory(database(), h.tenantId, 'in_nope', { resolution: 'hour' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('answers a second sampling of the same minute only once the first has written its sample', async () => {
    h = await startHarness(1);
    await crowd(h, 'c', range(1, 3));
    const id = await start(h, await workflow(h, definition), 'c');
    const counts = await h.engine.getCounts(h.tenantId, id);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = { id, tenantId: h.tenantId, counts: () => released.then(() => counts) };
    const sampler = new CountsSampler(database());
    const minute = Math.floor(h.clock.now() / MINUTE_MS) * MINUTE_MS + 3 * MINUTE_MS;

    const first = sampler.sampleIfDue(minute, [slow]);
    let secondDone = false;
    const second = sampler.sampleIfDue(minute + 1_000, [slow]).then(() => (secondDone = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(secondDone).toBe(false);
    release();
    await Promise.all([first, second]);
    expect(await db().countsSample.count({ where: { instanceId: id, at: BigInt(minute) } })).toBe(1);
  });
});
