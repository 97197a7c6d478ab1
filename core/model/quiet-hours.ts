// Quiet hours (issue 37 §3): no action deliveries between `start` and `end` (HH:MM, wall-clock time) in each user's
// own time zone. The window math lives here, pure and shared with the studio: whether a moment is quiet in a zone, and
// when the window next opens there. Wall-clock minutes are read with Intl (the zone's daylight saving included), so a
// window that spans midnight (21:00–08:00) or a night whose clocks change needs no special case beyond the scan below.
import { timeZoneProblem } from './cron';
import type { QuietHoursRule } from './workflow';

export const QUIET_MODES = ['hold', 'drop'] as const;

/** The attribute local-time timers offer first (studio/editor/inspector-timer.tsx); quiet hours default to it too. */
export const DEFAULT_QUIET_ZONE_ATTRIBUTE = 'timezone';

const MINUTE_MS = 60_000;
const DAY_MINUTES = 1440;
/** A clock change moves a window's opening by at most this much (whole hours almost everywhere, 30 min on Lord Howe). */
const CLOCK_CHANGE_MS = 2 * 3_600_000;

/** Minutes after midnight of an `HH:MM` time, or undefined when it is not one (24-hour clock, two digits each). */
export function clockMinutes(text: string): number | undefined {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text);
  return match ? Number(match[1]) * 60 + Number(match[2]) : undefined;
}

/**
 * What is wrong with a rule's times and default zone, each naming its field; empty when nothing is. Both the tenant
 * rule's route and validateWorkflow() (the journey override) report these.
 */
export function quietHoursProblems(rule: { start?: unknown; end?: unknown; defaultZone?: unknown }): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  for (const field of ['start', 'end'] as const) {
    const value = rule[field];
    if (typeof value === 'string' && clockMinutes(value) === undefined)
      problems.push({ field, message: `"${value.slice(0, 20)}" is not a time: write HH:MM on a 24-hour clock, e.g. 21:00 or 08:00` });
  }
  if (typeof rule.start === 'string' && rule.start === rule.end)
    problems.push({ field: 'end', message: `start and end are both ${rule.start}: a window needs two different times, e.g. 21:00 to 08:00` });
  if (typeof rule.defaultZone === 'string') {
    const problem = timeZoneProblem(rule.defaultZone);
    if (problem) problems.push({ field: 'defaultZone', message: problem });
  }
  return problems;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Minutes after local midnight at `at` (epoch ms) in `zone`, daylight saving included. */
export function minuteOfDay(at: number, zone: string): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hourCycle: 'h23', hour: '2-digit', minute: '2-digit' });
    if (formatters.size >= 1_000) formatters.clear();
    formatters.set(zone, format);
  }
  let hour = 0;
  let minute = 0;
  for (const part of format.formatToParts(at)) {
    if (part.type === 'hour') hour = Number(part.value) % 24;
    else if (part.type === 'minute') minute = Number(part.value);
  }
  return hour * 60 + minute;
}

/** Whether `at` falls inside the window in `zone`: [start, end) on the wall clock, across midnight when end < start. */
export function isQuietAt(rule: Pick<QuietHoursRule, 'start' | 'end'>, at: number, zone: string): boolean {
  const start = clockMinutes(rule.start) ?? 0;
  const end = clockMinutes(rule.end) ?? 0;
  const minute = minuteOfDay(at, zone);
  return start < end ? minute >= start && minute < end : minute >= start || minute < end;
}

/**
 * When deliveries may go again in `zone`: `at` itself outside the window, else the first minute at which it is over.
 * The wall-clock distance to `end` gives a guess; a clock change in between moves the truth by up to an hour (and a
 * spring-forward gap may skip `end` itself: the window then opens when the clocks jump past it), so the answer is the
 * first minute out of the window from two hours before the guess, which is still inside it (the window runs without
 * a break from `at` to its opening).
 */
export function quietEndsAt(rule: Pick<QuietHoursRule, 'start' | 'end'>, at: number, zone: string): number {
  if (!isQuietAt(rule, at, zone)) return at;
  const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
  const ahead = ((clockMinutes(rule.end) ?? 0) - minuteOfDay(at, zone) + DAY_MINUTES) % DAY_MINUTES;
  const guess = minute + ahead * MINUTE_MS;
  for (let t = Math.max(minute + MINUTE_MS, guess - CLOCK_CHANGE_MS); t <= guess + CLOCK_CHANGE_MS; t += MINUTE_MS) if (!isQuietAt(rule, t, zone)) return t;
  return guess;
}
