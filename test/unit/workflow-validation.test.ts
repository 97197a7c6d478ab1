import { describe, expect, it } from 'vitest';
import { cronProblem, describeCron, nextCronTime, timeZoneProblem } from '../../core/model/cron';
import { welcomeJourney, welcomeJourneyDraft } from '../../core/model/sample-workflows';
import { validateSchedule, validateWorkflow } from '../../core/model/validate';
import type { WorkflowProblem } from '../../core/model/workflow';

/** A workflow using every step kind, every optional field, and a loop through a branch step. */
const everyKind = {
  steps: [
    {
      name: 'entry',
      kind: 'branch',
      enterAction: 'welcome',
      ttl: '1d',
      branches: [
        { condition: 'event.type == "purchase"', next: 'fan_out' },
        { condition: 'inCrowd("vip") && profile.country in ["FR", "DE"]', next: 'nightly' },
        { condition: 'true', next: 'wait' },
      ],
    },
    { name: 'nightly', kind: 'timer', cron: '0 0 21 * * MON-FRI', condition: 'profile.score > 3', next: 'ab', leaveAction: 'nightly_done' },
    { name: 'wait', kind: 'delay', after: '1h30m', next: 'entry' },
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 33.3, next: 'exit_a' },
        { percent: 66.7, next: 'exit_b' },
      ],
    },
    { name: 'fan_out', kind: 'parallel', actions: ['email', 'push'], next: 'exit_a' },
    { name: 'exit_a', kind: 'direct' },
    { name: 'exit_b', kind: 'direct', enterAction: 'goodbye' },
  ],
  stopAt: '2030-01-01T00:00:00Z',
};

function problemsOf(definition: unknown, options = {}): WorkflowProblem[] {
  const result = validateWorkflow(definition, options);
  if (result.ok) throw new Error('expected the workflow to be refused');
  return result.problems;
}

/** A valid workflow with `change` applied to a copy of it. */
function everyKindWith(change: (steps: any[]) => void): unknown {
  const copy = structuredClone(everyKind);
  change(copy.steps);
  return copy;
}

describe('validateWorkflow', () => {
  it('accepts a workflow with every step kind and returns the parsed definition', () => {
    const result = validateWorkflow(everyKind);
    expect(result).toEqual({ ok: true, definition: everyKind });
  });

  it('accepts the demo journey, whose draft places every step', () => {
    expect(validateWorkflow(welcomeJourney)).toEqual({ ok: true, definition: welcomeJourney });
    expect(Object.keys(welcomeJourneyDraft.positions).sort()).toEqual(welcomeJourney.steps.map((s) => s.name).sort());
    expect(new Set(welcomeJourney.steps.map((s) => s.kind))).toEqual(new Set(['branch', 'timer', 'delay', 'split', 'parallel', 'direct']));
  });

  it('accepts a single terminal step', () => {
    expect(validateWorkflow({ steps: [{ name: 'only', kind: 'direct' }] }).ok).toBe(true);
  });

  it('maps shape problems to the step they belong to, by name or else by index', () => {
    const problems = problemsOf({
      steps: [{ name: 'start', kind: 'direct', next: 'later', colour: 'red' }, { name: 'later', kind: 'teleport' }, 'not a step', { kind: 'direct', next: 42 }],
    });
    expect(problems).toContainEqual({ step: 'start', code: 'invalid_field', message: expect.stringMatching(/^Step "start": Unrecognized key: "colour"/) });
    expect(problems).toContainEqual({ step: 'later', code: 'invalid_field', message: expect.stringMatching(/^Step "later" kind: .*'direct' \| 'branch'/) });
    expect(problems).toContainEqual({ step: 'steps[2]', code: 'invalid_field', message: expect.stringMatching(/^Step "steps\[2\]": .*expected object/) });
    expect(problems).toContainEqual({ step: 'steps[3]', code: 'invalid_field', message: expect.stringMatching(/^Step "steps\[3\]" next: .*expected string/) });
    expect(problems).toContainEqual({ step: 'steps[3]', code: 'invalid_field', message: expect.stringMatching(/^Step "steps\[3\]" name: .*expected string/) });
  });

  it('reports a field a step kind does not have once, as an unrecognized key', () => {
    const problems = problemsOf({ steps: [{ name: 'a', kind: 'direct', after: 'soon', condition: '(' }] });
    expect(problems).toEqual([{ step: 'a', code: 'invalid_field', message: 'Step "a": Unrecognized keys: "after", "condition"' }]);
  });

  it('reports problems of the workflow as a whole with step null', () => {
    expect(problemsOf(null)).toEqual([{ step: null, code: 'invalid_field', message: expect.stringMatching(/^Workflow definition: .*expected object/) }]);
    expect(problemsOf({ steps: [] })).toEqual([{ step: null, code: 'invalid_field', message: 'Workflow steps: A workflow needs at least one step' }]);
    expect(problemsOf({ steps: [{ name: 'a', kind: 'direct' }], owner: 'me' })).toEqual([
      { step: null, code: 'invalid_field', message: 'Workflow definition: Unrecognized key: "owner"' },
    ]);
  });

  it('checks exit criteria through the condition gate, once each, naming exit.condition', () => {
    const only = [{ name: 'a', kind: 'direct' }];
    expect(validateWorkflow({ steps: only, exit: { condition: 'event.type == "unsubscribe" || inCrowd("churned")' } }).ok).toBe(true);
    expect(problemsOf({ steps: only, exit: { condition: 'event.type ==' } })).toEqual([
      { step: null, code: 'bad_condition', message: expect.stringMatching(/^Workflow exit\.condition is not a valid condition: /) },
    ]);
    expect(problemsOf({ steps: only, exit: { condition: '  ' } })).toEqual([
      { step: null, code: 'bad_condition', message: 'Workflow exit.condition: A condition cannot be empty' },
    ]);
    const nested = `${'[0,1,2].all(x, '.repeat(15)}true${')'.repeat(15)}`;
    expect(problemsOf({ steps: only, exit: { condition: nested } }, { now: 0 })).toEqual([
      { step: null, code: 'condition_too_costly', message: expect.stringMatching(/^Workflow exit\.condition is estimated to cost /) },
    ]);
    expect(problemsOf({ steps: only, exit: {} })).toEqual([
      { step: null, code: 'invalid_field', message: expect.stringMatching(/^Workflow exit\.condition: /) },
    ]);
  });

  it('refuses duplicate step names, once per name', () => {
    const problems = problemsOf({
      steps: [
        { name: 'a', kind: 'direct', next: 'b' },
        { name: 'b', kind: 'direct' },
        { name: 'b', kind: 'direct' },
      ],
    });
    expect(problems).toEqual([{ step: 'b', code: 'duplicate_step', message: 'Step name "b" is used by 2 steps (positions 2, 3); step names must be unique' }]);
  });

  it('refuses a next that points at no step, for every kind of next', () => {
    const problems = problemsOf(
      everyKindWith((steps) => {
        steps[0].branches[1].next = 'ghost';
        steps[3].paths[0].next = 'nowhere';
        steps[2].next = 'void';
      }),
    );
    const unknown = problems.filter((p) => p.code === 'unknown_next');
    expect(unknown).toEqual([
      { step: 'entry', code: 'unknown_next', message: 'Step "entry" branches[1].next points at "ghost", which is not a step of this workflow' },
      { step: 'wait', code: 'unknown_next', message: 'Step "wait" next points at "void", which is not a step of this workflow' },
      { step: 'ab', code: 'unknown_next', message: 'Step "ab" paths[0].next points at "nowhere", which is not a step of this workflow' },
    ]);
    // With the edge to nightly gone, nightly and the steps only it leads to are no longer reachable.
    expect(problems.filter((p) => p.code === 'unreachable').map((p) => p.step)).toEqual(['nightly', 'ab', 'exit_b']);
  });

  it('needs at least 1 branch, 2 paths and 1 parallel action', () => {
    const problems = problemsOf({
      steps: [
        { name: 'entry', kind: 'branch', branches: [] },
        { name: 'one', kind: 'branch', branches: [{ condition: 'true', next: 'split' }] },
        { name: 'split', kind: 'split', paths: [{ percent: 100, next: 'both' }] },
        { name: 'both', kind: 'parallel', actions: [] },
      ],
    });
    // "one" has a single branch: valid (an event no condition matches leaves the user there). "one" is unreachable
    // only because "entry" has no way out.
    expect(problems.filter((p) => p.code !== 'unreachable')).toEqual([
      {
        step: 'entry',
        code: 'too_few_branches',
        message: 'Step "entry" has no branches; a branch step needs at least 1 (an event no condition matches leaves the user in the step)',
      },
      { step: 'split', code: 'too_few_paths', message: 'Step "split" has 1 path; a split step needs at least 2' },
      { step: 'both', code: 'no_actions', message: 'Step "both" has no actions; a parallel step emits at least 1 action' },
    ]);
  });

  it('needs split percents that add up to 100', () => {
    const problems = problemsOf(everyKindWith((steps) => (steps[3].paths[1].percent = 60)));
    expect(problems).toEqual([{ step: 'ab', code: 'percent_sum', message: 'Step "ab" split percents add up to 93.3; they must add up to 100' }]);
    const outOfRange = problemsOf(
      everyKindWith(
        (steps) =>
          (steps[3].paths = [
            { percent: 150, next: 'exit_a' },
            { percent: -50, next: 'exit_b' },
          ]),
      ),
    );
    expect(outOfRange.map((p) => [p.step, p.code])).toEqual([
      ['ab', 'invalid_field'],
      ['ab', 'invalid_field'],
    ]);
    expect(outOfRange[0].message).toMatch(/^Step "ab" paths\[0\]\.percent: /);
  });

  it('parses timer crons with a seconds field and refuses 5-field or broken ones', () => {
    const cron = (value: string) => problemsOf(everyKindWith((steps) => (steps[1].cron = value)));
    expect(cron('0 21 * * *')).toEqual([
      {
        step: 'nightly',
        code: 'bad_cron',
        message: 'Step "nightly" cron "0 21 * * *" has 5 fields; Crowdflow crons start with a seconds field, e.g. "0 0 21 * * *"',
      },
    ]);
    expect(cron('0 0 25 * * *')).toEqual([
      { step: 'nightly', code: 'bad_cron', message: 'Step "nightly" cron "0 0 25 * * *": Constraint error, got value 25 expected range 0-23' },
    ]);
    expect(cron('every day')[0]).toMatchObject({ step: 'nightly', code: 'bad_cron', message: expect.stringContaining('has 2 fields; expected 6') });
    expect(cron('0 0 0 30 2 *')[0]).toMatchObject({ step: 'nightly', code: 'bad_cron' });
    expect(cron('')[0]).toMatchObject({ step: 'nightly', code: 'invalid_field' });
    expect(validateWorkflow(everyKindWith((steps) => (steps[1].cron = '@hourly'))).ok).toBe(true);
  });

  it('parses durations and refuses malformed or zero ones', () => {
    const problems = problemsOf(
      everyKindWith((steps) => {
        steps[2].after = '90 minutes';
        steps[0].ttl = '0m';
      }),
    );
    expect(problems).toEqual([
      { step: 'entry', code: 'bad_duration', message: 'Step "entry" ttl "0m" is zero; a duration must be longer than 0' },
      { step: 'wait', code: 'bad_duration', message: 'Step "wait" after "90 minutes" is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m' },
    ]);
  });

  it('checks conditions as CEL and refuses empty ones', () => {
    const problems = problemsOf(
      everyKindWith((steps) => {
        steps[0].branches[0].condition = 'event.type == ';
        steps[0].branches[1].condition = '   ';
        steps[0].branches[2].condition = 'score > 3';
        steps[1].condition = 'profile.score >> 3';
      }),
    );
    expect(problems).toEqual([
      { step: 'entry', code: 'bad_condition', message: expect.stringMatching(/^Step "entry" branches\[0\]\.condition is not a valid condition: \S/) },
      { step: 'entry', code: 'bad_condition', message: 'Step "entry" branches[1].condition: A condition cannot be empty' },
      // Beyond syntax: the conditions module also refuses variables a condition cannot read.
      { step: 'entry', code: 'bad_condition', message: expect.stringMatching(/^Step "entry" branches\[2\]\.condition is not a valid condition: .*score/) },
      { step: 'nightly', code: 'bad_condition', message: expect.stringMatching(/^Step "nightly" condition is not a valid condition: \S/) },
    ]);
  });

  it('refuses steps unreachable from the entry step', () => {
    const problems = problemsOf({
      steps: [
        { name: 'entry', kind: 'direct', next: 'done' },
        { name: 'done', kind: 'direct' },
        { name: 'island', kind: 'delay', after: '5m', next: 'done' },
      ],
    });
    expect(problems).toEqual([
      { step: 'island', code: 'unreachable', message: 'Step "island" cannot be reached from the entry step "entry"; no step moves users to it' },
    ]);
  });

  it('refuses loops of steps that move users on at once, but not loops through a waiting step', () => {
    const problems = problemsOf({
      steps: [
        { name: 'entry', kind: 'direct', next: 'fan' },
        { name: 'fan', kind: 'parallel', actions: ['a'], next: 'coin' },
        {
          name: 'coin',
          kind: 'split',
          paths: [
            { percent: 50, next: 'entry' },
            { percent: 50, next: 'exit' },
          ],
        },
        { name: 'exit', kind: 'direct' },
      ],
    });
    expect(problems).toEqual([
      {
        step: 'entry',
        code: 'instant_cycle',
        message:
          'Step "entry" is on a loop of steps that move users on at once (entry → fan → coin → entry); put a timer or delay step, or a branch step that waits for an event, on the loop',
      },
    ]);
    expect(validateWorkflow(everyKind).ok).toBe(true); // entry → wait → entry loops through a branch and a delay
  });

  it('refuses at save a loop through a branch step that routes on entry, not one through a branch that waits for an event', () => {
    const loop = (condition: string) => ({
      steps: [
        {
          name: 'plan',
          kind: 'branch',
          branches: [
            { condition, next: 'again' },
            { condition: 'profile.plan == "free"', next: 'plan' }, // back to itself: a stay, not a hop
          ],
          timeout: { after: '1d', next: 'again' },
        },
        { name: 'again', kind: 'direct', next: 'plan' },
      ],
    });
    const now = Date.UTC(2026, 0, 1);
    expect(problemsOf(loop('profile.plan == "pro"'), { now })).toEqual([
      {
        step: 'plan',
        code: 'instant_cycle',
        message:
          'Step "plan" is on a loop of steps that move users on at once (plan → again → plan); put a timer or delay step, or a branch step that waits for an event, on the loop',
      },
    ]);
    expect(validateWorkflow(loop('profile.plan == "pro"')).ok).toBe(true); // a stored version keeps loading
    expect(validateWorkflow(loop('event.type == "upgrade"'), { now }).ok).toBe(true);
    expect(validateWorkflow(loop('inCrowd("vip")'), { now }).ok).toBe(false);
  });

  it('accepts any valid stopAt, and refuses a past one only when told the time', () => {
    const past = { ...everyKind, stopAt: '2020-01-01T00:00:00Z' };
    expect(validateWorkflow(past).ok).toBe(true);
    expect(problemsOf(past, { now: Date.UTC(2026, 0, 1) })).toEqual([
      { step: null, code: 'bad_stop_at', message: 'Workflow stopAt 2020-01-01T00:00:00Z is in the past; an instance would stop as soon as it starts' },
    ]);
    expect(validateWorkflow(everyKind, { now: Date.UTC(2026, 0, 1) }).ok).toBe(true);
    expect(problemsOf({ ...everyKind, stopAt: '2026-02-30T10:00:00Z' })).toEqual([
      { step: null, code: 'bad_stop_at', message: 'Workflow stopAt "2026-02-30T10:00:00Z" is not an ISO 8601 time with a zone, e.g. 2026-12-31T23:00:00Z' },
    ]);
    expect(problemsOf({ ...everyKind, stopAt: 1767225600000 })).toEqual([
      { step: null, code: 'bad_stop_at', message: 'Workflow stopAt 1767225600000 is not an ISO 8601 time with a zone, e.g. 2026-12-31T23:00:00Z' },
    ]);
  });

  it('handles the longest allowed chain and refuses more steps than the limit', () => {
    const chain = (length: number) => ({
      steps: Array.from({ length }, (_, i) => ({ name: `s${i}`, kind: 'direct', ...(i + 1 < length ? { next: `s${i + 1}` } : {}) })),
    });
    expect(validateWorkflow(chain(1000)).ok).toBe(true);
    expect(problemsOf(chain(1001))).toEqual([{ step: null, code: 'too_many_steps', message: 'Workflow has 1001 steps; the limit is 1000' }]);
  });

  it('returns every problem of a workflow at once', () => {
    const problems = problemsOf({
      steps: [
        { name: 'entry', kind: 'branch', branches: [{ condition: '(', next: 'missing' }] },
        { name: 'twin', kind: 'timer', cron: '* * *', next: 'entry' },
        { name: 'twin', kind: 'delay', after: 'soon', next: 'entry', extra: true },
      ],
    });
    expect(problems.map((p) => `${p.step}:${p.code}`).sort()).toEqual(
      [
        'entry:bad_condition',
        'entry:unknown_next',
        'twin:bad_cron',
        'twin:bad_duration',
        'twin:duplicate_step',
        'twin:invalid_field',
        'twin:unreachable',
      ].sort(),
    );
    for (const problem of problems) expect(problem.message).toContain(`"${problem.step}"`);
  });
});

describe('crons and schedules', () => {
  it('describes and steps through 6-field crons in UTC', () => {
    expect(describeCron('0 */5 * * * *')).toBe('Every 5 minutes (UTC)');
    expect(describeCron('0 0 9 * * MON-FRI')).toBe('At 09:00, Monday through Friday (UTC)');
    expect(describeCron('not a cron')).toBe('not a cron');
    expect(nextCronTime('30 0 9 * * *', Date.UTC(2026, 0, 1, 9, 0, 30))).toBe(Date.UTC(2026, 0, 2, 9, 0, 30));
    expect(nextCronTime('*/10 * * * * *', Date.UTC(2026, 0, 1, 0, 0, 1))).toBe(Date.UTC(2026, 0, 1, 0, 0, 10));
  });

  it('evaluates a timer cron in its IANA time zone, daylight saving included, and refuses unknown zones naming the step', () => {
    const nine = '0 0 9 * * *';
    // Amsterdam moves from CET (UTC+1) to CEST (UTC+2) on 2026-03-29: 09:00 local is 08:00 UTC, then 07:00 UTC.
    expect(nextCronTime(nine, Date.UTC(2026, 2, 27, 12), 'Europe/Amsterdam')).toBe(Date.UTC(2026, 2, 28, 8));
    expect(nextCronTime(nine, Date.UTC(2026, 2, 28, 12), 'Europe/Amsterdam')).toBe(Date.UTC(2026, 2, 29, 7));
    expect(nextCronTime(nine, Date.UTC(2026, 2, 28, 12))).toBe(Date.UTC(2026, 2, 29, 9));
    expect(describeCron(nine, 'Europe/Amsterdam')).toBe('At 09:00 (Europe/Amsterdam)');
    expect(timeZoneProblem('America/New_York')).toBeNull();
    const timer = (tz: unknown) => ({
      steps: [
        { name: 'tick', kind: 'timer', cron: nine, tz, next: 'end' },
        { name: 'end', kind: 'direct' },
      ],
    });
    expect(validateWorkflow(timer('Europe/Amsterdam')).ok).toBe(true);
    for (const tz of ['Mars/Olympus', '+01:00', '']) {
      expect(problemsOf(timer(tz))).toEqual([
        {
          step: 'tick',
          code: 'bad_time_zone',
          message: `Step "tick" tz "${tz}" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"`,
        },
      ]);
    }
    expect(problemsOf(timer(7))).toEqual([{ step: 'tick', code: 'invalid_field', message: 'Step "tick" tz: Invalid input: expected string, received number' }]);
  });

  it('refuses aliases it does not know and hashed values', () => {
    expect(cronProblem('@daily')).toBeNull();
    expect(cronProblem('@often')).toMatch(/not a known cron alias/);
    expect(cronProblem('H * * * * *')).toMatch(/hashed "H" values are not supported/);
  });

  it('validates a start schedule', () => {
    expect(validateSchedule({ cron: '0 0 8 * * *', crowd: 'all', enabled: true })).toEqual([]);
    expect(validateSchedule({ cron: '0 8 * * *', crowd: 'all' })).toEqual([
      { step: null, code: 'bad_cron', message: 'Schedule cron "0 8 * * *" has 5 fields; Crowdflow crons start with a seconds field, e.g. "0 0 8 * * *"' },
    ]);
    expect(validateSchedule({ cron: '0 0 8 * * *' })).toEqual([{ step: null, code: 'invalid_field', message: expect.stringMatching(/^Schedule crowd: /) }]);
  });
});
