import { parseCron } from '../model/cron';
import type { WorkflowDefinition, WorkflowProblem } from '../model/workflow';

/** Firings looked at: enough to see the shortest gap of any cron people write (e.g. "0-5 0 * * * *" within 6). */
const FIRINGS = 20;

/** The shortest time (ms) between two of the next firings of a valid cron after `now`. */
export function shortestCronGap(cron: string, now: number, tz?: string): number {
  const expression = parseCron(cron, now, tz);
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
    const gap = shortestCronGap(step.cron, now, step.tz);
    if (gap >= minPeriodSeconds * 1000) continue;
    problems.push({
      step: step.name,
      code: 'timer_too_frequent',
      message: `Step "${step.name}" cron "${step.cron}" fires ${gap / 1000} s apart; this tenant's timers may fire at most once every ${minPeriodSeconds} s (limit minTimerPeriodSeconds)`,
    });
  }
  return problems;
}
