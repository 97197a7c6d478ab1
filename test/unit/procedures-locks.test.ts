import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../server/clock';
import { ProcedureTypes } from '../../server/procedures/registry';
import { createProcedureRunner } from '../../server/procedures/runner';
import { fairShare } from '../../server/procedures/store';
import type { LockKey, ProcedureRunner, ProcedureState, ProcedureView } from '../../server/procedures/types';
import { db, database } from '../helpers/app-db';
import { gate, script, scriptedState, scriptedType } from '../fixtures/procedures/scripted';
import { waitFor } from '../helpers/wait-for';

const ROLLBACK = 'locks.rollback';
const PLAIN = 'locks.plain';
const clock = new ManualClock();
let runner: ProcedureRunner;
const runners: ProcedureRunner[] = [];
/** One table for every runner of the file, as processes running the same code share their types. */
const types = new ProcedureTypes();

function startRunner(options: Parameters<typeof createProcedureRunner>[1] = {}): ProcedureRunner {
  const created = createProcedureRunner(database(), { clock, owner: 'locks-runner', types, ...options });
  runners.push(created);
  void created.start();
  return created;
}

const waitUntil = (check: () => boolean | Promise<boolean>, what: string) => waitFor(what, check, Boolean, { timeoutMs: 20_000, everyMs: 5 });

async function waitForState(id: string, state: ProcedureState): Promise<ProcedureView> {
  await waitUntil(async () => (await runner.get(id))?.state === state, `${id} to be ${state}`);
  return (await runner.get(id))!;
}

/** Lets the runner claim everything it may claim now, for asserting that something was not started. */
function settle(): Promise<void> {
  return runner.settled();
}

const exclusive = (key: string): LockKey => ({ key, mode: 'exclusive' });
const shared = (key: string): LockKey => ({ key, mode: 'shared' });

beforeAll(() => {
  types.register(scriptedType(ROLLBACK, { supportsRollback: true }));
  types.register(scriptedType(PLAIN, { supportsRollback: false }));
});

afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await db().procedureStep.deleteMany({});
  await db().procedure.deleteMany({});
});

describe('lock keys', () => {
  it('two procedures with the same exclusive key run one after the other, in submission order', async () => {
    const first = gate();
    const a = script('ex-a', { gate: first.promise });
    const b = script('ex-b');
    runner = startRunner();
    const idA = await runner.submit(PLAIN, scriptedState('ex-a', 2, { keys: [exclusive('workflow/1')] }));
    const idB = await runner.submit(PLAIN, scriptedState('ex-b', 1, { keys: [exclusive('workflow/1')] }));
    await waitUntil(() => a.log.length === 1, 'a to start');
    await settle();
    expect(b.log).toEqual([]);
    expect((await runner.get(idB))!.owner).toBeNull();
    first.open();
    expect((await runner.await(idB)).state).toBe('done');
    const [doneA, doneB] = [(await runner.get(idA))!, (await runner.get(idB))!];
    expect(Date.parse(doneA.finishedAt!)).toBeLessThanOrEqual(Date.parse(doneB.finishedAt!));
    expect(b.log).toEqual(['execute 0']);
  });

  it('shared holders run together; an exclusive waiter blocks later shared ones (FIFO, no starvation)', async () => {
    const held = gate();
    const reader1 = script('sh-1', { gate: held.promise });
    const reader2 = script('sh-2', { gate: held.promise });
    const writer = script('sh-writer');
    const late = script('sh-late');
    runner = startRunner();
    await runner.submit(PLAIN, scriptedState('sh-1', 1, { keys: [shared('crowd/a')] }));
    await runner.submit(PLAIN, scriptedState('sh-2', 1, { keys: [shared('crowd/a'), shared('crowd/b')] }));
    await waitUntil(() => reader1.log.length === 1 && reader2.log.length === 1, 'both shared holders to run at once');
    const writerId = await runner.submit(PLAIN, scriptedState('sh-writer', 1, { keys: [exclusive('crowd/a')] }));
    const lateId = await runner.submit(PLAIN, scriptedState('sh-late', 1, { keys: [shared('crowd/a')] }));
    await settle();
    expect(writer.log).toEqual([]);
    expect(late.log).toEqual([]);
    held.open();
    await runner.await(lateId);
    const [w, l] = [(await runner.get(writerId))!, (await runner.get(lateId))!];
    expect(w.state).toBe('done');
    expect(Date.parse(w.finishedAt!)).toBeLessThanOrEqual(Date.parse(l.finishedAt!));
  });

  it('procedures on different keys do not wait for each other', async () => {
    const held = gate();
    script('key-a', { gate: held.promise });
    runner = startRunner();
    const a = await runner.submit(PLAIN, scriptedState('key-a', 1, { keys: [exclusive('workflow/a')] }));
    const b = await runner.submit(PLAIN, scriptedState('key-b', 1, { keys: [exclusive('workflow/b')] }));
    expect((await runner.await(b)).state).toBe('done');
    expect((await runner.get(a))!.state).toBe('running');
    held.open();
    await runner.await(a);
  });

  it('refuses a child whose keys conflict with its parent, up front', async () => {
    const held = gate();
    script('parent-held', { gate: held.promise });
    runner = startRunner();
    const parent = await runner.submit(PLAIN, scriptedState('parent-held', 1, { keys: [exclusive('workflow/7')] }));
    for (const keys of [[exclusive('workflow/7')], [shared('workflow/7')]]) {
      await expect(runner.submit(PLAIN, scriptedState('child', 1, { keys }), { parentId: parent })).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringMatching(/workflow\/7/),
      });
    }
    expect(await db().procedure.count({ where: { parentId: parent } })).toBe(0);
    held.open();
    await runner.await(parent);
  });

  it('a suspension with a conflicting child fails the parent without creating the child', async () => {
    runner = startRunner();
    const child = { type: PLAIN, state: scriptedState('bad-child', 1, { keys: [exclusive('workflow/9')] }) };
    const parent = await runner.submit(PLAIN, scriptedState('bad-parent', 1, { keys: [shared('workflow/9')], children: [child] }));
    const failed = await runner.await(parent);
    expect(failed.state).toBe('failed');
    expect(failed.error).toMatch(/conflicts with its ancestor .* workflow\/9/);
    expect(await db().procedure.count({ where: { parentId: parent } })).toBe(0);
  });

  it('at most maxConcurrent procedures execute at once; the rest wait in order', async () => {
    const held = gate();
    const scripts = ['m-1', 'm-2', 'm-3'].map((name) => script(name, { gate: held.promise }));
    runner = startRunner({ maxConcurrent: 2 });
    const ids = [];
    for (const name of ['m-1', 'm-2', 'm-3']) ids.push(await runner.submit(PLAIN, scriptedState(name, 1)));
    await waitUntil(() => scripts[0]!.log.length === 1 && scripts[1]!.log.length === 1, 'two to start');
    await settle();
    expect(scripts[2]!.log).toEqual([]);
    held.open();
    for (const id of ids) expect((await runner.await(id)).state).toBe('done');
  });
});

describe('sub-procedures', () => {
  it('the parent resumes only after every child has ended, and sees their outputs', async () => {
    const slow = gate();
    const parentScript = script('parent');
    script('child-slow', { gate: slow.promise });
    runner = startRunner();
    const children = [
      { type: PLAIN, state: scriptedState('child-slow', 2, { keys: [exclusive('export/1')] }) },
      { type: PLAIN, state: scriptedState('child-fast', 1) },
    ];
    const parent = await runner.submit(ROLLBACK, scriptedState('parent', 1, { keys: [exclusive('workflow/1')], children }), {
      tenantId: 'tenant-1',
      workflowId: 'wf-1',
    });
    const fast = `${parent}:1.1`;
    await waitForState(fast, 'done');
    await settle();
    expect(parentScript.log).toEqual(['execute 0']);
    expect((await runner.get(parent))!.state).toBe('running');
    slow.open();
    const done = await runner.await(parent);
    expect(done.state).toBe('done');
    expect(parentScript.log).toEqual(['execute 0', 'execute 0']);
    expect(done.output).toEqual({ done: 1, children: { [`${parent}:1.0`]: { done: 2, children: {} }, [fast]: { done: 1, children: {} } } });
    const child = (await runner.get(fast))!;
    expect(child).toMatchObject({ parentId: parent, tenantId: 'tenant-1', workflowId: 'wf-1' });
  });

  it('a failed child fails (and rolls back) the parent after all children ended', async () => {
    const parentScript = script('doomed-parent');
    script('failing-child', { failures: ['fatal'] });
    runner = startRunner();
    const children = [
      { type: PLAIN, state: scriptedState('failing-child', 1) },
      { type: PLAIN, state: scriptedState('fine-child', 1) },
    ];
    const parent = await runner.submit(ROLLBACK, scriptedState('doomed-parent', 2, { done: 1, children }));
    const failed = await runner.await(parent);
    expect(failed.state).toBe('failed');
    expect(failed.error).toBe(`child procedure ${parent}:1.0 (${PLAIN}) failed: quota exceeded`);
    expect(parentScript.log).toEqual(['execute 1', 'rollback 0']);
    expect((await runner.get(`${parent}:1.1`))!.state).toBe('done');
  });
});

describe('leases', () => {
  it('a procedure claimed by another live process is left alone; once its lease expires it is taken over', async () => {
    const now = clock.now();
    const row = { type: PLAIN, lockKeys: '[]', state: 'running', data: JSON.stringify(scriptedState('orphan', 2)), step: 0 };
    await db().procedure.create({ data: { ...row, id: 'orphan', owner: 'dead-process', createdAt: new Date(now), updatedAt: new Date(now) } });
    runner = startRunner({ leaseMs: 30_000 });
    await settle();
    expect((await runner.get('orphan'))!).toMatchObject({ owner: 'dead-process', step: 0 });
    await clock.advance(30_000);
    const done = await runner.await('orphan');
    expect(done.state).toBe('done');
    expect(done.step).toBe(2);
  });

  it('a procedure held by a process of this host that is gone is taken over at once, without waiting for its lease', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    const now = clock.now();
    const row = { type: PLAIN, lockKeys: '[]', state: 'running', data: JSON.stringify(scriptedState('crashed', 2)), step: 0 };
    await db().procedure.create({ data: { ...row, id: 'crashed', owner: `${hostname()}:${gone}`, createdAt: new Date(now), updatedAt: new Date(now) } });
    runner = startRunner({ leaseMs: 30_000 });
    const done = await runner.await('crashed');
    expect(done).toMatchObject({ state: 'done', step: 2 });
    expect(clock.now() - now).toBeLessThan(30_000);
  });
});

describe('scale-out', () => {
  it('two runners on one database never run the same procedure nor overlap on an exclusive key', async () => {
    const executions = new Map<string, number>();
    let inside = 0;
    let maxInside = 0;
    types.register({
      type: 'locks.contended',
      supportsRollback: false,
      create: (state) => ({
        lockKeys: () => [{ key: 'workflow/contended', mode: 'exclusive' as const }],
        state: () => state,
        async execute(ctx) {
          executions.set(ctx.procedureId, (executions.get(ctx.procedureId) ?? 0) + 1);
          inside += 1;
          maxInside = Math.max(maxInside, inside);
          // Both runners claim what they may while this one runs: a conflicting claim would be inside now.
          await Promise.all(runners.map((r) => r.settled()));
          inside -= 1;
          return { kind: 'done' as const };
        },
      }),
    });
    // Real time here: each runner only hears its own commits and polls for the other's, as two processes would.
    const [a, b] = ['process-a', 'process-b'].map((owner) => startRunner({ owner, clock: systemClock, pollMs: 20 })) as [ProcedureRunner, ProcedureRunner];
    runner = a;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await (i % 2 ? a : b).submit('locks.contended', { i }));
    for (const id of ids) expect((await a.await(id)).state).toBe('done');
    expect(maxInside).toBe(1);
    expect([...executions.values()]).toEqual(ids.map(() => 1));
    expect(await db().procedureStep.count({ where: { procedureId: { in: ids } } })).toBe(ids.length);
  });
});

describe('graceful stop', () => {
  it('a stopped runner hands its procedures over at once; they keep their place in the lock queue', async () => {
    script('handed-over', { failures: ['retry'] });
    const first = startRunner({ owner: 'stopping-process' });
    runner = first;
    const id = await first.submit(PLAIN, scriptedState('handed-over', 1, { keys: [exclusive('workflow/h')] }));
    await waitForState(id, 'retrying');
    await first.stop();
    expect((await first.get(id))!.owner).toBeNull();
    const later = await first.submit(PLAIN, scriptedState('handed-later', 1, { keys: [exclusive('workflow/h')] }));
    runner = startRunner({ owner: 'next-process', leaseMs: 30_000 });
    await clock.advance(1_000); // the backoff, far less than the lease
    const done = await runner.await(id);
    expect(done.state).toBe('done');
    const after = await runner.await(later);
    expect(Date.parse(done.finishedAt!)).toBeLessThanOrEqual(Date.parse(after.finishedAt!));
  });
});

describe('claim fairness', () => {
  it('shares a claim round-robin across tenants, each tenant in its queue order', () => {
    const queued = [
      ...['a1', 'a2', 'a3', 'a4', 'a5'].map((id) => ({ id, tenantId: 'a' })),
      { id: 'b1', tenantId: 'b' },
      { id: 'b2', tenantId: 'b' },
      { id: 'n1', tenantId: null },
    ];
    expect(fairShare(queued, 5).map((row) => row.id)).toEqual(['a1', 'b1', 'n1', 'a2', 'b2']);
    expect(fairShare(queued, 100).map((row) => row.id)).toEqual(['a1', 'b1', 'n1', 'a2', 'b2', 'a3', 'a4', 'a5']);
  });
});
