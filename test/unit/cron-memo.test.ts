import { describe, expect, it } from 'vitest';
import { nextCronTime, parseCron } from '../../core/model/cron';

function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('nextCronTime memoised by span answers what cron-parser answers', () => {
  const crons: [string, string | undefined][] = [
    ['*/10 * * * * *', undefined],
    ['30 0 9 * * *', undefined],
    ['0 0 9 * * MON-FRI', 'Europe/Amsterdam'],
    ['0 30 2 * * *', 'Europe/Amsterdam'], // 02:30 is skipped on the spring change and repeated in autumn
    ['47 11 5 1 12 *', undefined], // once a year
    ['0 0 0 29 2 *', 'America/New_York'], // leap days only
  ];
  for (const [cron, tz] of crons) {
    it(`${cron}${tz ? ` in ${tz}` : ''}`, () => {
      const random = seeded(cron.length * 7919);
      const start = Date.UTC(2026, 0, 1);
      // Times in random order (within a span, before it, after it, on firings and a millisecond around them), so the
      // answers come from spans learnt in any order.
      const afters: number[] = [];
      let firing = start;
      for (let i = 0; i < 6; i++) {
        firing = parseCron(cron, firing, tz).next().getTime();
        afters.push(firing, firing - 1, firing + 1, firing - 999, firing + 999);
      }
      for (let i = 0; i < 30; i++) afters.push(start + Math.floor(random() * (firing - start)));
      afters.sort(() => random() - 0.5);
      for (const after of afters)
        expect(nextCronTime(cron, after, tz), `after ${new Date(after).toISOString()}`).toBe(parseCron(cron, after, tz).next().getTime());
    });
  }
});
