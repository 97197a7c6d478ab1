import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { CheckpointSchedule } from '../../server/engine/checkpoint-schedule';

/** A partition that records when (the clock's time) it was handed its checkpoint. */
function partition(clock: ManualClock, name: string, handed: string[]) {
  return { checkpointDue: () => handed.push(`${name}@${clock.now() - start}`) };
}

const start = Date.UTC(2026, 0, 1);
let schedule: CheckpointSchedule | undefined;
afterEach(async () => {
  await schedule?.stop();
  schedule = undefined;
});

describe('the checkpoint schedule', () => {
  it('hands each partition its checkpoint at its time, those due together in one turn, and sleeps with none', async () => {
    const clock = new ManualClock(start);
    const handed: string[] = [];
    schedule = new CheckpointSchedule(clock);
    schedule.start();
    const [a, b, c] = ['a', 'b', 'c'].map((name) => partition(clock, name, handed));
    schedule.plan(c, start + 3_000);
    schedule.plan(a, start + 1_000);
    schedule.plan(b, start + 1_000);
    await schedule.settled();
    expect(clock.pendingSleepers()).toBe(1); // one timer for every partition

    await clock.advance(999);
    expect(handed).toEqual([]);
    await clock.advance(1);
    expect(handed.sort()).toEqual(['a@1000', 'b@1000']);
    await clock.advance(5_000);
    expect(handed).toContain('c@3000');
    expect(handed).toHaveLength(3);
  });

  it('keeps the earlier of two plans of a partition, and forgets a cancelled one', async () => {
    const clock = new ManualClock(start);
    const handed: string[] = [];
    schedule = new CheckpointSchedule(clock);
    schedule.start();
    const [a, b] = ['a', 'b'].map((name) => partition(clock, name, handed));
    schedule.plan(a, start + 10_000);
    schedule.plan(a, start + 2_000); // earlier: wakes the sleeping loop to plan again
    schedule.plan(a, start + 5_000); // later than planned: ignored
    schedule.plan(b, start + 1_000);
    schedule.cancel(b);
    await schedule.settled();
    await clock.advance(20_000);
    expect(handed).toEqual(['a@2000']);
  });
});
