import { describe, expect, it } from 'vitest';
import { shortestCronGap, timerPeriodProblems } from '../../server/limits/timer-period';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const CRONS = ['0 0 0 1 1 *', '0 0 9 * * *', '0 */15 9-17 * * MON-FRI', '*/20 * * * * *', '0,30 5 * * * *', '0 0 0,12 * * *', '@hourly', '0-5 0 * * * *'];

describe('the shortest gap of a timer cron', () => {
  it('is never overstated by the bound read from the fields, in UTC', () => {
    for (const cron of CRONS) {
      const exact = shortestCronGap(cron, NOW);
      for (const atLeast of [1_000, 60_000, 3_600_000, 86_400_000]) {
        const answer = shortestCronGap(cron, NOW, undefined, atLeast);
        // Either the exact gap, or a lower bound of it that already clears the limit asked about.
        expect(answer <= exact && (answer === exact || answer >= atLeast), `${cron} at least ${atLeast}`).toBe(true);
      }
    }
  });

  it('refuses a cron firing more often than the limit and accepts a yearly one', () => {
    const definition = (cron: string) => ({ steps: [{ name: 'tick', kind: 'timer' as const, cron, next: 'tick' }] });
    expect(timerPeriodProblems(definition('*/20 * * * * *'), 60, NOW)).toEqual([expect.objectContaining({ step: 'tick', code: 'timer_too_frequent' })]);
    expect(timerPeriodProblems(definition('0 0 0 1 1 *'), 60, NOW)).toEqual([]);
    // In a zone the clock changes can shorten a gap: the firings are looked at (a daily cron across a DST change).
    expect(shortestCronGap('0 30 2 * * *', Date.UTC(2026, 2, 20), 'Europe/Amsterdam', 3_600_000)).toBeLessThan(86_400_000);
  });
});
