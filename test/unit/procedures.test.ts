import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { AppError } from '../../server/errors';
import { ProcedureTypes } from '../../server/procedures/registry';
import { createProcedureRunner } from '../../server/procedures/runner';
import type { ProcedureRunner, ProcedureState, ProcedureView } from '../../server/procedures/types';
import type { Tx } from '../../server/storage/db';
import { db, database } from '../helpers/app-db';
import { newId } from '../../server/ids';
import { gate, script, SCRIPTED_WAIT_MS, scriptedState, scriptedType } from '../fixtures/procedures/scripted';
import { waitFor } from '../helpers/wait-for';

const ROLLBACK = 'test.rollback'; // supports rollback, 2 retries
const PLAIN = 'test.plain'; // no rollback, default 3 retries

let clock: ManualClock;
let runner: ProcedureRunner;
const runners: ProcedureRunner[] = [];
/** One table for every runner of the file, as processes running the same code share their types. */
const types = new ProcedureTypes();

function startRunner(options: Parameters<typeof createProcedureRunner>[1] = {}): ProcedureRunner {
  const created = createProcedureRunner(database(), { clock, owner: 'test-runner', types, ...options });
  runners.push(created);
  void created.start();
  return created;
}

/** Asks the database until the procedure reaches one of `states` (the runner commits on its own schedule). */
async function waitForState(id: string, ...states: ProcedureState[]): Promise<ProcedureView> {
  const view = await waitFor(
    `${id} to be ${states.join('|')}`,
    () => runner.get(id),
    (found) => !!found && states.includes(found.state),
    POLL,
  );
  return view!;
}

const POLL = { timeoutMs: 20_000, everyMs: 5 };
const waitUntil = (check: () => boolean | Promise<boolean>, what: string) => waitFor(what, check, Boolean, POLL);

async function stepStates(id: string): Promise<string[]> {
  const rows = await db().procedureStep.findMany({ where: { procedureId: id }, orderBy: { step: 'asc' } });
  return rows.map((row) => `${row.step}:${row.state}`);
}

beforeAll(() => {
  types.register(scriptedType(ROLLBACK, { supportsRollback: true, maxRetries: 2 }));
  types.register(scriptedType(PLAIN, { supportsRollback: false }));
});

afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await db().procedureStep.deleteMany({});
  await db().procedure.deleteMany({});
});

describe('procedure runner', () => {
  beforeAll(() => {
    clock = new ManualClock();
  });

  it('refuses a second registration of the same type', () => {
    expect(() => types.register(scriptedType(ROLLBACK, { supportsRollback: false }))).toThrow(/already registered/);
  });

  it('runs a multi-step procedure to done, persisting each step once', async () => {
    runner = startRunner();
    const id = await runner.submit(PLAIN, scriptedState('three-steps', 3));
    const done = await runner.await(id);
    expect(done.state).toBe('done');
    expect(done.step).toBe(3);
    expect(done.output).toEqual({ done: 3, children: {} });
    expect(done.owner).toBeNull();
    expect(done.finishedAt).not.toBeNull();
    expect(await stepStates(id)).toEqual(['1:running', '2:running', '3:done']);
  });

  it('retries a retry-later error with backoff, then succeeds', async () => {
    const s = script('flaky', { failures: ['retry', 'retry'] });
    runner = startRunner();
    const id = await runner.submit(ROLLBACK, scriptedState('flaky', 2));
    const first = await waitForState(id, 'retrying');
    expect(first.attempts).toBe(1);
    expect(first.error).toBe('database busy');
    const firstDelay = Date.parse(first.nextAttemptAt!) - clock.now();
    expect(firstDelay).toBeGreaterThanOrEqual(500);
    expect(firstDelay).toBeLessThanOrEqual(625);

    await clock.advance(firstDelay - 1);
    expect((await runner.get(id))!.attempts).toBe(1); // not before its time
    await clock.advance(1);
    await waitUntil(async () => (await runner.get(id))!.attempts === 2, 'second attempt');
    const second = (await runner.get(id))!;
    const secondDelay = Date.parse(second.nextAttemptAt!) - clock.now();
    expect(secondDelay).toBeGreaterThanOrEqual(1000);
    expect(secondDelay).toBeLessThanOrEqual(1250);

    await clock.advance(secondDelay);
    const done = await waitForState(id, 'done');
    expect(done.attempts).toBe(0);
    expect(done.error).toBeNull();
    expect(done.output).toEqual({ done: 2, children: {} });
    expect(s.log).toEqual(['execute 0', 'execute 0', 'execute 0', 'execute 1']);
  });

  it('a wait for a resource is retried beyond maxRetries, at most a second apart, showing attempts and the next attempt', async () => {
    const s = script('waits', { failures: ['wait', 'wait', 'wait', 'wait', 'wait'] });
    runner = startRunner();
    const id = await runner.submit(ROLLBACK, scriptedState('waits', 1));
    const startedAt = clock.now();
    for (let attempt = 1; attempt <= 5; attempt++) {
      await waitUntil(async () => (await runner.get(id))!.attempts === attempt, `attempt ${attempt}`);
      const view = (await runner.get(id))!;
      expect(view).toMatchObject({ state: 'retrying', error: 'partitions not owned yet', waitingSince: new Date(startedAt).toISOString() });
      const delay = Date.parse(view.nextAttemptAt!) - clock.now();
      expect(delay).toBeGreaterThan(0);
      expect(delay).toBeLessThanOrEqual(1_000);
      await clock.advance(delay);
    }
    const done = await waitForState(id, 'done');
    expect(done).toMatchObject({ attempts: 0, error: null, waitingSince: null });
    expect(s.log.filter((l) => l === 'execute 0')).toHaveLength(6);
  });

  it('a wait that outlasts its deadline fails, keeping its attempts and saying how long it waited', async () => {
    script('waits-forever', { failures: Array(100).fill('wait') });
    runner = startRunner();
    const id = await runner.submit(PLAIN, scriptedState('waits-forever', 1));
    const startedAt = clock.now();
    let attempts = 0;
    for (;;) {
      const view = await waitForState(id, 'retrying', 'failed');
      if (view.state === 'failed') {
        expect(view.error).toMatch(new RegExp(`^partitions not owned yet \\(gave up after waiting 1[01] s; the limit is ${SCRIPTED_WAIT_MS / 1000} s\\)$`));
        expect(clock.now() - startedAt).toBeGreaterThanOrEqual(SCRIPTED_WAIT_MS);
        expect(view.attempts).toBe(attempts);
        expect(view.attempts).toBeGreaterThan(3);
        expect(view.waitingSince).toBe(new Date(startedAt).toISOString());
        break;
      }
      if (view.attempts === attempts) continue;
      attempts = view.attempts;
      await clock.advance(Date.parse(view.nextAttemptAt!) - clock.now());
    }
  });

  it('after the retries are exhausted, rolls back step by step and fails, keeping the error', async () => {
    const s = script('exhausted', { failures: ['retry', 'retry', 'retry'] });
    runner = startRunner();
    const id = await runner.submit(ROLLBACK, scriptedState('exhausted', 3, { done: 2 }));
    for (const attempt of [1, 2]) {
      const retrying = await waitForState(id, 'retrying');
      expect(retrying.attempts).toBe(attempt);
      await clock.advance(Date.parse(retrying.nextAttemptAt!) - clock.now());
      if (attempt === 1) await waitUntil(async () => (await runner.get(id))!.attempts === 2, 'attempt 2');
    }
    const failed = await waitForState(id, 'failed');
    expect(failed.error).toBe('database busy');
    expect(failed.rollbackError).toBeNull();
    expect(failed.data).toMatchObject({ done: 2, undone: 2 });
    expect(s.log).toEqual(['execute 2', 'execute 2', 'execute 2', 'rollback 0', 'rollback 1']);
    expect(await stepStates(id)).toEqual(['1:rolling-back', '2:failed']);
  });

  it('a rollback that keeps failing is retried with backoff, then the procedure fails with both errors', async () => {
    const s = script('stuck-rollback', { failures: ['fatal'], rollbackFailures: 10 });
    runner = startRunner();
    const id = await runner.submit(ROLLBACK, scriptedState('stuck-rollback', 2, { done: 1 }));
    for (const attempt of [1, 2]) {
      const waiting = await waitForState(id, 'rolling-back');
      await waitUntil(async () => (await runner.get(id))!.attempts === attempt, `rollback attempt ${attempt}`);
      const view = (await runner.get(id))!;
      expect(view.rollbackError).toBe('rollback broken');
      expect(waiting.state).toBe('rolling-back');
      await clock.advance(Date.parse(view.nextAttemptAt!) - clock.now());
    }
    const failed = await waitForState(id, 'failed');
    expect(failed.error).toBe('quota exceeded');
    expect(failed.rollbackError).toBe('rollback broken');
    expect(s.log).toEqual(['execute 1', 'rollback 0', 'rollback 0', 'rollback 0']);
  });

  it('a non-retryable error is not retried: prepare-rollback, rollback, failed', async () => {
    const s = script('fatal', { failures: ['fatal'] });
    runner = startRunner();
    const id = await runner.submit(ROLLBACK, scriptedState('fatal', 2, { done: 1 }));
    const failed = await waitForState(id, 'failed');
    expect(failed.attempts).toBe(0);
    expect(failed.error).toBe('quota exceeded');
    expect(s.log).toEqual(['execute 1', 'rollback 0']);
    expect(await stepStates(id)).toEqual(['1:failed']);
  });

  it('a throw inside execute of a type without rollback fails it at once, and a retry by hand resumes from its last step', async () => {
    const s = script('bug', { failures: ['none', 'bug'] });
    runner = startRunner();
    const id = await runner.submit(PLAIN, scriptedState('bug', 3));
    const failed = await waitForState(id, 'failed');
    expect(failed.error).toMatch(/Cannot read properties of null/);
    expect(failed.step).toBe(1);
    await expect(runner.retry(id).then(() => runner.retry(id))).rejects.toMatchObject({ code: 'conflict' });
    const done = await runner.await(id);
    expect(done.state).toBe('done');
    expect(done.step).toBe(3);
    expect(s.log).toEqual(['execute 0', 'execute 1', 'execute 1', 'execute 2']);
  });

  it('on start, resumes procedures persisted in prepare-rollback and rolling-back (they keep rolling back)', async () => {
    const prepared = script('resume-prepared');
    const rolling = script('resume-rolling');
    const now = new Date(clock.now());
    const base = { type: ROLLBACK, lockKeys: '[]', createdAt: now, updatedAt: now, error: JSON.stringify({ message: 'disk full' }) };
    await db().procedure.create({
      data: { ...base, id: 'was-preparing', state: 'prepare-rollback', step: 2, data: JSON.stringify(scriptedState('resume-prepared', 3, { done: 2 })) },
    });
    await db().procedure.create({
      data: { ...base, id: 'was-rolling', state: 'rolling-back', step: 3, data: JSON.stringify(scriptedState('resume-rolling', 3, { done: 2, undone: 1 })) },
    });
    runner = startRunner();
    const [a, b] = [await runner.await('was-preparing'), await runner.await('was-rolling')];
    expect([a.state, a.error, a.step]).toEqual(['failed', 'disk full', 4]);
    expect([b.state, b.error, b.step]).toEqual(['failed', 'disk full', 4]);
    expect(prepared.log).toEqual(['rollback 0', 'rollback 1']);
    expect(rolling.log).toEqual(['rollback 1']);
    expect(await stepStates('was-rolling')).toEqual(['4:failed']);
  });

  it('submitting an existing id returns it without a second run', async () => {
    const s = script('once');
    runner = startRunner();
    const [a, b] = await Promise.all([
      runner.submit(PLAIN, scriptedState('once', 1), { id: 'fixed-id' }),
      runner.submit(PLAIN, scriptedState('once', 1), { id: 'fixed-id' }),
    ]);
    expect([a, b]).toEqual(['fixed-id', 'fixed-id']);
    await runner.await('fixed-id');
    expect(await runner.submit(PLAIN, scriptedState('once', 1), { id: 'fixed-id' })).toBe('fixed-id');
    expect(await db().procedure.count()).toBe(1);
    expect(s.log).toEqual(['execute 0']);
    await expect(runner.submit(ROLLBACK, scriptedState('once', 1), { id: 'fixed-id' })).rejects.toBeInstanceOf(AppError);
  });

  it('writes submitted together with a procedure commit with its row or not at all', async () => {
    script('together');
    runner = startRunner();
    const tenantId = newId('tn');
    const together = (tx: Tx) => tx.tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 1 } }).then(() => undefined);
    expect(await runner.submit(PLAIN, scriptedState('together', 1), { id: 'together-ok', together })).toBe('together-ok');
    expect(await db().tenant.count({ where: { id: tenantId } })).toBe(1);
    await runner.await('together-ok');

    // A second tenant of that name: the unique name refuses it, and no procedure is left behind.
    const taken = (tx: Tx) => tx.tenant.create({ data: { id: newId('tn'), name: tenantId.toLowerCase(), partitions: 1 } }).then(() => undefined);
    await expect(runner.submit(PLAIN, scriptedState('together', 1), { id: 'together-refused', together: taken })).rejects.toMatchObject({ code: 'P2002' });
    expect(await runner.get('together-refused')).toBeNull();
    await db().tenant.delete({ where: { id: tenantId } });
  });

  it('await returns the unfinished procedure when its timeout elapses on the runner clock', async () => {
    const held = gate();
    script('slow', { gate: held.promise });
    runner = startRunner();
    const id = await runner.submit(PLAIN, scriptedState('slow', 1));
    const waiting = runner.await(id, 5_000);
    await clock.advance(5_000);
    expect((await waiting).state).toBe('running');
    held.open();
    expect((await runner.await(id)).state).toBe('done');
  });

  it('removes finished procedures and their steps after the retention, keeping the rest', async () => {
    runner = startRunner({ retentionMs: 60_000 });
    const old = await runner.submit(PLAIN, scriptedState('old', 2));
    await runner.await(old);
    await clock.advance(60_001);
    const recent = await runner.submit(PLAIN, scriptedState('recent', 1));
    await runner.await(recent);
    expect(await runner.cleanup()).toBe(1);
    expect(await runner.get(old)).toBeNull();
    expect(await db().procedureStep.count({ where: { procedureId: old } })).toBe(0);
    expect((await runner.get(recent))!.state).toBe('done');
  });
});
