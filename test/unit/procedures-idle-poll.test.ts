import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { ProcedureTypes } from '../../server/procedures/registry';
import { createProcedureRunner } from '../../server/procedures/runner';
import { database } from '../helpers/app-db';
import { faultyDatabase } from '../fixtures/faulty-database';
import { scriptedState, scriptedType } from '../fixtures/procedures/scripted';

// An idle pump polls less and less often (1 s doubling to 8 s), a submit of this process wakes it at once, another
// process's submit is picked up within the longest poll, and after work the poll is short again. Its database
// operations are counted through a fault-free faulty database (a Prisma query hook on the real database).

const TYPE = 'test.idle-poll';
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const counted = faultyDatabase(database(), { provider: process.env.CROWDFLOW_TEST_PROVIDER === 'postgres' ? 'postgres' : 'sqlite', rate: 0, seed: 1 });
/** The two processes run the same code: they know the same types. */
const types = new ProcedureTypes();
// A long lease: no heartbeat falls within the test, so every operation after the first round is a look for work.
const runner = createProcedureRunner(counted.database, { clock, types, owner: 'idle-poll-runner', leaseMs: 3_600_000 });
/** Another process on the same database: it submits and never runs anything. */
const elsewhere = createProcedureRunner(database(), { clock, types, owner: 'idle-poll-elsewhere' });

beforeAll(() => types.register(scriptedType(TYPE, { supportsRollback: false })));
afterAll(() => runner.stop());

/** The seconds (from now, one at a time) in which the pump touched the database, over `seconds`. */
async function looksOver(seconds: number): Promise<number[]> {
  const looks: number[] = [];
  let seen = counted.operations;
  for (let second = 1; second <= seconds; second++) {
    await clock.advance(1_000);
    await runner.asleep();
    if (counted.operations !== seen) looks.push(second);
    seen = counted.operations;
  }
  return looks;
}

describe('an idle procedure pump', () => {
  it('backs off to 8 s, wakes at a submit of this process, finds another process’s within 8 s, and polls at 1 s after work', async () => {
    await runner.start();
    await runner.asleep();
    expect(await looksOver(40)).toEqual([2, 6, 14, 22, 30, 38]);

    // A submit here wakes the pump at once; after the work the poll starts again from 1 s.
    const here = await runner.submit(TYPE, scriptedState('here', 1));
    expect((await runner.await(here)).state).toBe('done');
    await runner.settled();
    expect(await looksOver(24)).toEqual([1, 3, 7, 15, 23]);

    // Another process's submit (at 00:01:05; the pump looked at 00:01:03 and looks next at 00:01:11) waits for that look.
    await clock.advance(1_000);
    await runner.asleep();
    const there = await elsewhere.submit(TYPE, scriptedState('there', 1));
    expect((await runner.get(there))!.state).toBe('running');
    // (What follows the claim depends on when the turn ends, which the clock does not decide.)
    expect((await looksOver(8))[0]).toBe(6);
    expect((await runner.await(there)).state).toBe('done');
  });
});
