import type { CronExpression } from 'cron-parser';
import { parseCron } from '../../core/model/cron';
import type { WorkflowDefinition, WorkflowProblem } from '../../core/model/workflow';

/** Firings looked at: enough to see the shortest gap of any cron people write (e.g. "0-5 0 * * * *" within 6). */
const FIRINGS = 20;

/** Seconds of a day, hour and minute: what one value more or less of each time field moves a firing by. */
const FIELD_SECONDS = [
  ['hour', 3_600, 24],
  ['minute', 60, 60],
  ['second', 1, 60],
] as const;

/**
 * A lower bound (ms) of the time between two firings of `expression`, read from its time fields: the finest field with
 * more than one value sets it (values 0,15,30,45 of the minute with one second value: 15 minutes at least), and with
 * one value each it fires at most once a day. Exact only in UTC, where no clock change shortens a gap.
 */
function gapLowerBound(expression: CronExpression): number {
  let bound = 86_400;
  for (const [field, seconds, range] of FIELD_SECONDS) {
    const values = [...expression.fields[field].values].map(Number).sort((a, b) => a - b);
    if (values.length < 2) continue;
    const steps = values.map((value, i) => (i === 0 ? values[0] + range - values[values.length - 1] : value - values[i - 1]));
    bound = Math.min(...steps) * seconds;
  }
  return bound * 1000;
}

/**
 * The shortest time (ms) between two of the next firings of a valid cron after `now`, or a lower bound of it that is
 * at least `atLeastMs` (all a limit check needs to know). Firings are looked at only when
 * the cron's fields cannot show the answer to be at least `atLeastMs` (a zone's clock changes can shorten any gap by an
 * hour): cron-parser searches a rare cron's firings day by day, and a yearly cron's 20 firings took 0.4 s of the
 * thread that saves the workflow.
 */
export function shortestCronGap(cron: string, now: number, tz?: string, atLeastMs = Number.POSITIVE_INFINITY): number {
  const expression = parseCron(cron, now, tz);
  if ((tz ?? 'UTC') === 'UTC') {
    const bound = gapLowerBound(expression);
    if (bound >= atLeastMs) return bound;
  }
  let previous = expression.next().getTime();
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < FIRINGS && expression.hasNext(); i++) {
    const next = expression.next().getTime();
    shortest = Math.min(shortest, next - previous);
    previous = next;
  }
  return shortest;
}

/** Timer steps whose cron fires more often than the tenant's minimum period, each as a problem naming the step and the limit. */
export function timerPeriodProblems(definition: WorkflowDefinition, minPeriodSeconds: number, now: number): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  for (const step of definition.steps) {
    if (step.kind !== 'timer') continue;
    const gap = shortestCronGap(step.cron, now, step.tz, minPeriodSeconds * 1000);
    if (gap >= minPeriodSeconds * 1000) continue;
    problems.push({
      step: step.name,
      code: 'timer_too_frequent',
      message: `Step "${step.name}" cron "${step.cron}" fires ${gap / 1000} s apart; this tenant's timers may fire at most once every ${minPeriodSeconds} s (limit minTimerPeriodSeconds)`,
    });
  }
  return problems;
}
