// Experiments that pick a winner (issue 37 §5) through a real engine: a 50/50 split run as an experiment over a
// purchase goal. Each path's users and conversions are counted from bitmaps and checked here against the users each
// step holds; they survive a restart (checkpoint + journal). Sending the rest to a path makes a new version whose
// split sends every new entrant there, mapped onto the running instance, while users already past the split keep
// their paths. An experiment decides by itself at its date, or once a path is best with probability ≥ 0.95, on the
// engine's (manual) clock.
import { afterEach, describe, expect, it } from 'vitest';
import { loadShard } from '../../server/engine/recovery';
import { Shard } from '../../server/engine/shard';
import { db, database } from '../helpers/app-db';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { advance, crowd, range, restartEngine, send, settle, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const journey = (experiment: NonNullable<Extract<WorkflowDefinition['steps'][number], { kind: 'split' }>['experiment']>): WorkflowDefinition => ({
  steps: [
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 50, next: 'a' },
        { percent: 50, next: 'b' },
      ],
      experiment,
    },
    { name: 'a', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
    { name: 'b', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
    { name: 'done', kind: 'direct' },
  ],
  goal: { condition: 'event.type == "buy"' },
});

const figures = async (id: string) => (await h!.engine.getCounts(h!.tenantId, id)).experiments?.ab;
const version = async (id: string) => (await db().instance.findUniqueOrThrow({ where: { id } })).version;

describe('experiments', () => {
  it('count each path from bitmaps, and send the rest to the winner in a new version while earlier users keep their paths', async () => {
    h = await startHarness(3);
    await crowd(h, 'c', range(1, 2000));
    const workflowId = await workflow(h, journey({}));
    const id = await start(h, workflowId, 'c');
    const [a, b] = [await stepUsers(h, id, 'a'), await stepUsers(h, id, 'b')];
    expect(a.length + b.length).toBe(2000);
    expect(Math.abs(a.length - 1000)).toBeLessThan(4 * Math.sqrt(2000 * 0.25)); // binomial sd ≈ 22

    // 30 of path a's users buy, 60 of path b's.
    await send(
      h,
      [...a.slice(0, 30), ...b.slice(0, 60)].map((user) => ({ user, type: 'buy' })),
    );
    const measured = {
      paths: [
        { path: 'a', entered: a.length, converted: 30 },
        { path: 'b', entered: b.length, converted: 60 },
      ],
      winner: null,
    };
    expect(await figures(id)).toEqual(measured);
    await restartEngine(h);
    expect(await figures(id)).toEqual(measured);

    // Send the rest to b: version 2 sends 100% there, recorded as the winner; the instance runs it.
    const done = await settle(h, h.engine.sendToWinner(h.tenantId, id, { step: 'ab', path: 'b' }, h.clock.now()));
    expect(done).toBe(id);
    expect(await version(id)).toBe(2);
    const stored = await db().workflowVersion.findUniqueOrThrow({ where: { tenantId_workflowId_version: { tenantId: h.tenantId, workflowId, version: 2 } } });
    expect(JSON.parse(stored.definition).steps[0]).toEqual({
      ...journey({}).steps[0],
      paths: [
        { percent: 0, next: 'a' },
        { percent: 100, next: 'b' },
      ],
      experiment: { winner: { path: 'b', at: new Date(h.clock.now()).toISOString(), by: 'manual' } },
    });
    expect((await db().workflow.findUniqueOrThrow({ where: { id: workflowId } })).currentVersion).toBe(2);

    // 1,000 new users enter: every one takes b. Those who took a before are still there.
    await crowd(h, 'more', range(1, 3000));
    await settle(h, h.engine.updateInstanceCrowd(h.tenantId, id, { crowd: 'more' }));
    expect(await stepUsers(h, id, 'a')).toEqual(a.slice(30));
    expect(await stepUsers(h, id, 'b')).toEqual([...b.slice(60), ...range(2001, 3000)]);
    expect(await figures(id)).toEqual({
      paths: [
        { path: 'a', entered: a.length, converted: 30 },
        { path: 'b', entered: b.length + 1000, converted: 60 },
      ],
      winner: 'b',
    });
    // Decided once: a second winner is refused.
    await expect(h.engine.sendToWinner(h.tenantId, id, { step: 'ab', path: 'a' }, h.clock.now())).rejects.toThrow('already sends everyone to "b"');
  });

  it("rebuild each path's users from the journal alone, and keep them in checkpoints", async () => {
    h = await startHarness(2);
    const id = await settle(h, h.engine.startInstance(h.tenantId, await workflow(h, { ...journey({}), entry: { event: 'signup', reentry: 'once' } }), {}));
    await send(
      h,
      range(1, 300).map((user) => ({ user, type: 'signup' })),
    );
    const instance = h.engine.findRuntime(id)!;
    const paths = (shard: Shard) => ['a', 'b'].map((path) => shard.paths.get('ab')?.get(path)?.toArray() ?? []);
    await db().shardCheckpoint.deleteMany({ where: { instanceId: id } });
    let took = 0;
    for (let partition = 0; partition < h.partitions; partition++) {
      const kept = instance.shards[partition]!;
      const { shard } = await loadShard(database(), h.tenantId, id, partition, instance.workflow);
      expect(paths(shard)).toEqual(paths(kept));
      expect(paths(Shard.decode(id, partition, kept.encode()))).toEqual(paths(kept));
      took += paths(kept).flat().length;
    }
    expect(took).toBe(300);
  });

  it('decide by themselves at their date, on the engine clock', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', range(1, 600));
    const after = new Date(h.clock.now() + 3_600_000).toISOString();
    const id = await start(h, await workflow(h, journey({ autoWinner: { after } })), 'c');
    const a = await stepUsers(h, id, 'a');
    await send(
      h,
      a.slice(0, 40).map((user) => ({ user, type: 'buy' })),
    );
    await advance(h, 3_540_000); // a minute before: undecided
    expect(await h.runner.get(`experiment.winner:${id}:1:ab`)).toBeNull();
    await advance(h, 60_000);
    const procedure = await h.runner.await(`experiment.winner:${id}:1:ab`, 60_000);
    expect(procedure.state).toBe('done');
    expect(await version(id)).toBe(2);
    expect((await figures(id))?.winner).toBe('a');
  });

  it('decide by themselves once a path is best with probability ≥ 0.95 and every path has enough users', async () => {
    h = await startHarness(2);
    await crowd(h, 'c', range(1, 1000));
    const id = await start(h, await workflow(h, journey({ autoWinner: { significance: true } })), 'c');
    const [a, b] = [await stepUsers(h, id, 'a'), await stepUsers(h, id, 'b')];
    // 50 against 52 buyers: undecided after the next sample.
    await send(
      h,
      [...a.slice(0, 50), ...b.slice(0, 52)].map((user) => ({ user, type: 'buy' })),
    );
    await advance(h, 60_000);
    expect(await h.runner.get(`experiment.winner:${id}:1:ab`)).toBeNull();
    // 40 more buy on path b: b is clearly best.
    await send(
      h,
      b.slice(52, 92).map((user) => ({ user, type: 'buy' })),
    );
    await advance(h, 60_000);
    expect((await h.runner.await(`experiment.winner:${id}:1:ab`, 60_000)).state).toBe('done');
    expect((await figures(id))?.winner).toBe('b');
    const stored = await db().workflowVersion.findFirstOrThrow({
      where: { version: 2, workflow: { id: (await db().instance.findUniqueOrThrow({ where: { id } })).workflowId } },
    });
    expect(JSON.parse(stored.definition).steps[0].experiment.winner).toMatchObject({ path: 'b', by: 'significance' });
  });
});
