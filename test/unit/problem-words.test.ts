import { describe, expect, it } from 'vitest';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { definitionToGraph } from '../../studio/convert';
import { describeProblems } from '../../studio/editor/problems';

// validateWorkflow()'s messages as the editor shows them (issue 32 §2): the box and the step named in the marketer's
// words, never a request path (`timeout.after`, `entry.event`) or zod's wording ("Too small: expected string…").

/** What must never reach the marketer: request paths, the validator's field names, zod's generic wording. */
const RAW =
  /Too (small|big)|expected (string|number|array)|Invalid (input|option)|\b(entry|goal|timeout|branches|paths|actions|steps)(\.|\[)|\b(enterAction|leaveAction|tzFromProfile|stopAt)\b|^Workflow /;

/** A journey a marketer could leave half done in the editor: every box of every kind left empty or mistyped. */
const BROKEN = {
  steps: [
    { name: 'wait', kind: 'branch', enterAction: '', branches: [{ condition: '', next: 'end' }], timeout: { after: '', next: 'end' } },
    { name: 'later', kind: 'delay', after: '2 days', ttl: '', next: 'end' },
    { name: 'daily', kind: 'timer', cron: '', tz: 'Mars/Olympus', tzFromProfile: 'profile.tz', next: 'end' },
    {
      name: 'ab',
      kind: 'split',
      paths: [
        { percent: 150, next: 'end' },
        { percent: -50, next: 'end' },
      ],
    },
    { name: 'fan', kind: 'parallel', actions: [''], leaveAction: '', next: 'end' },
    { name: 'end', kind: 'direct' },
  ],
  entry: { event: '', condition: '', reentry: 'once' },
  goal: { condition: 'event.type ==' },
  stopAt: '2020-01-01T00:00:00Z',
} as unknown as WorkflowDefinition;

describe('problems in the marketer’s words', () => {
  it('names the box and says what is wrong, for every problem of a half-done journey', () => {
    const result = validateWorkflow(BROKEN, { now: Date.parse('2026-01-01T00:00:00Z') });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const shown = describeProblems(definitionToGraph(BROKEN, null).nodes, result.problems);
    for (const problem of shown) expect(problem.text, problem.message).not.toMatch(RAW);
    const said = (step: string | null) => shown.filter((p) => p.step === step).map((p) => p.text);
    expect(said(null)).toEqual([
      'Entry event type is empty: write the event type that lets users in, e.g. signup',
      'Stop time 2020-01-01T00:00:00Z is in the past; an instance would stop as soon as it starts',
      'Entry “Only when” condition is empty',
      'Goal “Converted when” condition is not valid: Unexpected token: EOF (at character 14)',
    ]);
    expect(said('wait')).toEqual(['On enter action is empty', 'Timeout is empty: write how long to wait, e.g. 2d', 'If 1 condition is empty']);
    // the cron's two messages (empty text, no fields) are one problem in words
    expect(said('daily').slice(0, 3)).toEqual([
      'Cron is empty: write when it fires, e.g. 0 0 9 * * *',
      'Zone attribute: An attribute path is keys joined by dots, without the `profile.` prefix or spaces: e.g. timezone or address.tz',
      'Time zone "Mars/Olympus" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"',
    ]);
    expect(said('ab').slice(0, 2)).toEqual(['Path 1 share must be 100 or less', 'Path 2 share must be 0 or more']);
    expect(said('fan').slice(0, 2)).toEqual(['On leave action is empty', 'Action 1 is empty']);
    expect(said('later').slice(0, 2)).toEqual([
      'Wait for "2 days" is not a duration; write e.g. 30s, 5m, 2h, 7d or 1h30m',
      'Re-evaluate when idle (ttl) is empty: write how long, e.g. 1d, or leave it out',
    ]);
  });
});
