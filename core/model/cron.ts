import { CronExpressionParser, type CronExpression } from 'cron-parser';
import cronstrue from 'cronstrue';

// Crowdflow crons always carry a seconds field (6 fields: s m h dom mon dow), evaluated in UTC unless a timer step
// names an IANA time zone (`tz`): cron-parser then evaluates it in that zone's wall-clock time, daylight saving
// included (a firing in the skipped spring hour runs an hour later that day; the repeated autumn hour fires once).
// cron-parser 5 silently reads a 5-field expression as "minute hour dom mon dow" with seconds = 0,
// so "*/5 * * * *" would run every 5 minutes where the author may have meant seconds: the field
// count is checked here before cron-parser sees the text. Its @-aliases (@daily, @hourly…) expand
// to 6 fields and are accepted.

const ALIASES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly', '@minutely', '@secondly', '@weekdays', '@weekends'];

/** The fields in order, with how many values each has: a step can be no larger than that. */
const FIELDS = [
  { name: 'second', values: 60 },
  { name: 'minute', values: 60 },
  { name: 'hour', values: 24 },
  { name: 'day-of-month', values: 31 },
  { name: 'month', values: 12 },
  { name: 'day-of-week', values: 7 },
];

/**
 * Which rules a cron is held to: `save` (a save, the canvas, schedules) also refuses a step larger than its field,
 * which cron-parser reads as "once" (`0-59/99999999` fires once a minute); `stored` keeps a cron saved before that
 * rule running as it always has.
 */
export type CronRules = 'save' | 'stored';

/** Null when `cron` is a valid 6-field (seconds-first) expression, otherwise why it is not. */
export function cronProblem(cron: string, rules: CronRules = 'save'): string | null {
  const text = cron.trim();
  if (text.startsWith('@')) {
    return ALIASES.includes(text) ? parseProblem(text) : `"${text}" is not a known cron alias (${ALIASES.join(', ')})`;
  }
  // cron-parser picks hashed ("H") values at random unless seeded: every parse would schedule differently.
  if (/H/i.test(text.replace(/[A-Za-z]{3}/g, ''))) return `"${text}": hashed "H" values are not supported; write the exact second/minute`;
  const fields = text.split(/\s+/).filter(Boolean).length;
  if (fields === 5) return `"${text}" has 5 fields; Crowdflow crons start with a seconds field, e.g. "0 ${text}"`;
  if (fields !== 6) return `"${text}" has ${fields} field${fields === 1 ? '' : 's'}; expected 6: second minute hour day-of-month month day-of-week`;
  return parseProblem(text) ?? (rules === 'save' ? stepProblem(text) : null);
}

function stepProblem(text: string): string | null {
  const fields = text.split(/\s+/).filter(Boolean);
  for (const [i, field] of fields.entries()) {
    const { name, values } = FIELDS[i];
    for (const part of field.split(',')) {
      const step = /\/(\d+)$/.exec(part)?.[1];
      if (step !== undefined && Number(step) > values) {
        return `"${text}": the step /${step} in the ${name} field is larger than the field's ${values} values; a step can be at most ${values}`;
      }
    }
  }
  return null;
}

function parseProblem(text: string): string | null {
  try {
    CronExpressionParser.parse(text, { tz: 'UTC' });
    return null;
  } catch (error) {
    return `"${text}": ${(error as Error).message}`;
  }
}

/** Null when `tz` is an IANA time zone the cron library knows (e.g. "Europe/Amsterdam"), otherwise why it is not. */
export function timeZoneProblem(tz: string): string | null {
  try {
    CronExpressionParser.parse('0 0 0 * * *', { tz, currentDate: 0 }).next();
    return null;
  } catch {
    return `"${tz}" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"`;
  }
}

const knownZones = new Map<string, boolean>();

/**
 * Whether `tz` is a zone the cron library knows, memoised: a local-time timer asks it of every distinct zone value in
 * the tenant's profiles at each firing. Values are bounded by the profile index's distinct strings per attribute.
 */
export function isTimeZone(tz: string): boolean {
  let known = knownZones.get(tz);
  if (known === undefined) {
    if (knownZones.size >= 10_000) knownZones.clear();
    known = timeZoneProblem(tz) === null;
    knownZones.set(tz, known);
  }
  return known;
}

/** A parsed cron in `tz` (UTC by default); `currentDate` is where iteration starts. Throws on an invalid expression. */
export function parseCron(cron: string, currentDate: number | Date = Date.now(), tz = 'UTC'): CronExpression {
  const problem = cronProblem(cron, 'stored');
  if (problem) throw new Error(problem);
  return CronExpressionParser.parse(cron.trim(), { tz, currentDate });
}

/** Per zone and cron, spans [from, next) with no firing strictly inside: every `after` in one has `next` as its answer. */
const knownSpans = new Map<string, { from: number; next: number }[]>();
const SPANS_KEPT = 8;

/**
 * The next time (epoch ms) strictly after `after` at which `cron` fires. Memoised by span: cron-parser takes
 * milliseconds per answer (tens for a yearly cron, searching day by day), and every partition of a timer step asks in
 * one tick (a local-time timer once per zone), replay asks once per journaled firing, and the engine asks ahead of a
 * firing (`timers.ts`) so the tick itself finds its answer here.
 */
export function nextCronTime(cron: string, after: number, tz = 'UTC'): number {
  const key = `${tz} ${cron}`;
  let spans = knownSpans.get(key);
  const known = spans?.find((span) => span.from <= after && after < span.next);
  if (known) return known.next;
  const next = parseCron(cron, after, tz).next().getTime();
  if (!spans) {
    if (knownSpans.size >= 10_000) knownSpans.clear();
    knownSpans.set(key, (spans = []));
  }
  if (spans.length >= SPANS_KEPT) spans.shift();
  spans.push({ from: after, next });
  return next;
}

/**
 * Human wording of a valid cron ("At 09:00, Monday through Friday (UTC)"; a local-time timer's "(each user's
 * timezone, else UTC)"); the raw text when invalid.
 */
export function describeCron(cron: string, tz = 'UTC', tzFromProfile?: string): string {
  if (cronProblem(cron, 'stored')) return cron;
  const zone = tzFromProfile ? `each user's ${tzFromProfile}, else ${tz}` : tz;
  try {
    return `${cronstrue.toString(cron.trim(), { use24HourTimeFormat: true, verbose: false })} (${zone})`;
  } catch {
    return cron;
  }
}
