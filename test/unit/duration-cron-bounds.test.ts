import { describe, expect, it } from 'vitest';
import { cronProblem, nextCronTime } from '../../core/model/cron';
import { validateSchedule, validateWorkflow } from '../../core/model/validate';
import { MAX_DURATION_MS } from '../../core/model/workflow';

// Durations and cron steps that the engine would read as something else than what they say are refused at save
// (the canvas validates with `now` too), while a version stored before these rules still loads.

const NOW = Date.UTC(2026, 0, 1);

function withDurations(after: string, ttl = '1h', timeout = '2d'): unknown {
  return {
    steps: [
      { name: 'wait', kind: 'delay', after, ttl, next: 'ask' },
      { name: 'ask', kind: 'branch', branches: [{ condition: 'true', next: 'done' }], timeout: { after: timeout, next: 'done' } },
      { name: 'done', kind: 'direct' },
    ],
  };
}

const timer = (cron: string) => ({
  steps: [
    { name: 'tick', kind: 'timer', cron, next: 'done' },
    { name: 'done', kind: 'direct' },
  ],
});

describe('duration bound', () => {
  it('accepts 366d (and 52w, 8784h) and refuses anything longer, naming the step and field', () => {
    for (const longest of ['366d', '52w2d', '8784h', '365d23h59m59s1000ms']) expect(validateWorkflow(withDurations(longest), { now: NOW }).ok).toBe(true);
    expect(MAX_DURATION_MS).toBe(366 * 24 * 3_600_000);
    const result = validateWorkflow(withDurations('366d1ms', '999999999w', '9999999999999999999999d'), { now: NOW });
    expect(result.ok ? [] : result.problems).toEqual([
      { step: 'wait', code: 'bad_duration', message: 'Step "wait" after "366d1ms" is longer than 366d, the longest duration' },
      { step: 'wait', code: 'bad_duration', message: 'Step "wait" ttl "999999999w" is longer than 366d, the longest duration' },
      {
        step: 'ask',
        code: 'bad_duration',
        message: 'Step "ask" timeout.after "9999999999999999999999d" is longer than 366d, the longest duration',
      },
    ]);
  });

  it('is a save-time rule: a stored version with a longer duration still loads', () => {
    expect(validateWorkflow(withDurations('999999999w')).ok).toBe(true);
  });
});

describe('cron step bound', () => {
  it('refuses a step larger than its field, in any field, naming the step and field', () => {
    const result = validateWorkflow(timer('0-59/99999999 * * * * *'), { now: NOW });
    expect(result.ok ? [] : result.problems).toEqual([
      {
        step: 'tick',
        code: 'bad_cron',
        message:
          'Step "tick" cron "0-59/99999999 * * * * *": the step /99999999 in the second field is larger than the ' +
          "field's 60 values; a step can be at most 60",
      },
    ]);
    expect(cronProblem('0 */61 * * * *')).toContain('/61 in the minute field');
    expect(cronProblem('0 0 5/25 * * *')).toContain('/25 in the hour field');
    expect(cronProblem('0 0 0 1,2/32 * *')).toContain('/32 in the day-of-month field');
    expect(cronProblem('0 0 0 * JAN-DEC/13 *')).toContain('/13 in the month field');
    expect(cronProblem('0 0 0 * * MON/8')).toContain('/8 in the day-of-week field');
    expect(validateSchedule({ cron: '*/99 0 6 * * MON', crowd: 'all' })).toEqual([
      expect.objectContaining({ code: 'bad_cron', message: expect.stringContaining('the step /99 in the second field') }),
    ]);
  });

  it('accepts steps up to their field size: */60 seconds is once a minute, as it says', () => {
    for (const cron of ['*/60 * * * * *', '0 */60 * * * *', '0 0 */24 * * *', '0 0 0 */31 * *', '0 0 0 * */12 *', '0 0 0 * * */7', '10-20/15 * * * * *']) {
      expect(cronProblem(cron)).toBeNull();
    }
    expect(nextCronTime('*/60 * * * * *', NOW)).toBe(NOW + 60_000);
  });

  it('is a save-time rule: a stored timer with a larger step still loads and fires as before', () => {
    expect(validateWorkflow(timer('0-59/99999999 * * * * *')).ok).toBe(true);
    expect(cronProblem('0-59/99999999 * * * * *', 'stored')).toBeNull();
    expect(nextCronTime('0-59/99999999 * * * * *', NOW)).toBe(NOW + 60_000);
  });
});
