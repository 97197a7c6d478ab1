import { expect, it } from 'vitest';
import { ManualClock, Wakeup } from '../../server/clock';

it('a wake after the loop took its signal ends the sleep; the next round sleeps until woken again', async () => {
  const clock = new ManualClock();
  const wakeup = new Wakeup();
  const first = wakeup.signal();
  wakeup.wake(); // the loop was still looking for work
  wakeup.wake(); // more wakes of the same round change nothing
  await clock.sleep(60_000, first); // returns at once: the clock never moved
  expect(first.aborted).toBe(true);

  const second = wakeup.signal();
  expect(second).not.toBe(first);
  expect(second.aborted).toBe(false);
  let woke = false;
  const sleeping = clock.sleep(60_000, second).then(() => (woke = true));
  await clock.advance(1_000);
  expect(woke).toBe(false);
  expect(clock.pendingSleepers()).toBe(1);
  wakeup.wake();
  await sleeping;
  expect(woke).toBe(true);
  expect(clock.pendingSleepers()).toBe(0);
});

it('a round nobody woke keeps its signal', () => {
  const wakeup = new Wakeup();
  expect(wakeup.signal()).toBe(wakeup.signal());
});
