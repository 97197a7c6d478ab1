import { RE2JS } from 're2js';
import { describe, expect, it, vi } from 'vitest';
import { compileCondition, requireCondition, type CrowdMembership } from '../../server/conditions/compile';
import { ConditionCostExceeded, CONDITION_COST_BUDGET, staticCost } from '../../core/conditions/cost';
import { analyzeCondition } from '../../core/conditions/analyze';
import { celCostProblem } from '../../core/conditions/parse';
import { validateWorkflow } from '../../core/model/validate';

const none: CrowdMembership = { has: () => false };
const cost = (text: string) => {
  const analysis = analyzeCondition(text);
  if (!analysis.ok) throw new Error(analysis.problem);
  return staticCost(analysis.condition.parsed.ast);
};
const list300 = `[${Array.from({ length: 300 }, (_, i) => i).join(', ')}]`;
/** The triple comprehension, over event lists (three 300-element literals would pass the 4,096-character limit). */
const TRIPLE = 'event.data.a.exists(x, event.data.a.exists(y, event.data.a.exists(z, x + y + z == -1.0)))';

describe('static cost estimate (save time)', () => {
  it('gives constant work a small fixed cost and grows with sizes the way cel-go does', () => {
    expect(cost('event.type == "click"')).toBeLessThan(10);
    expect(cost('profile.age >= 18 && inCrowd("vip")')).toBeLessThan(10);
    // one comprehension over an event list of the assumed 1,024 items, nested ones multiply
    const single = cost('event.data.items.exists(i, i == "x")');
    const nested = cost('event.data.items.exists(i, event.data.other.exists(j, i == j))');
    expect(single).toBeGreaterThan(1_024);
    expect(nested).toBeGreaterThan(single * 1_000);
    // RE2 is linear in input x pattern
    expect(cost('event.data.s.matches("(a+)+$")')).toBeGreaterThan(cost('event.data.s.matches("a")'));
  });

  it('accepts the conditions people write and refuses the triple comprehension over 300-element lists', () => {
    for (const ok of [
      'event.data.s.matches("(a+)+$")',
      'event.data.tags.exists(t, t.startsWith("vip"))',
      'profile.email.matches("^[a-z0-9.]+@[a-z0-9.]+\\\\.(com|org|net)$")',
      `${list300}.exists(x, x == event.data.n)`,
    ]) {
      expect(celCostProblem(ok), ok).toBeNull();
    }
    expect(cost(TRIPLE)).toBeGreaterThan(CONDITION_COST_BUDGET);
    expect(celCostProblem(TRIPLE)).toMatch(/is estimated to cost [\d,]+ per evaluation .*the budget is 1,000,000/);
  });

  it('refuses a workflow over the budget with a 400-style problem naming the step and the budget', () => {
    const result = validateWorkflow(
      {
        steps: [
          {
            name: 'wait',
            kind: 'branch',
            branches: [
              { condition: TRIPLE, next: 'done' },
              { condition: 'true', next: 'done' },
            ],
          },
          { name: 'done', kind: 'direct' },
        ],
      },
      { now: Date.now() },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      expect.objectContaining({
        step: 'wait',
        code: 'condition_too_costly',
        message: expect.stringMatching(/^Step "wait" branches\[0\]\.condition is estimated to cost .* the budget is 1,000,000/),
      }),
    ]);
  });
});

describe('runtime budget (per evaluation)', () => {
  const regex = compileCondition(requireCondition('event.data.s.matches("(a+)+$")', 'stored'));
  const input = (s: string) => ({ user: 1, now: 0, event: { type: 't', data: { s }, time: 0 } });

  it('evaluates an event of ordinary size', () => {
    expect(regex.predicate(input('aaa'), none)).toBe(true);
    expect(regex.predicate(input('a'.repeat(27) + 'b'), none)).toBe(false);
  });

  it('refuses, before running it, an evaluation whose actual inputs make it cost more than the budget', () => {
    const huge = 'a'.repeat(400_000) + 'b';
    const matcher = vi.spyOn(RE2JS.prototype, 'matcher');
    expect(() => regex.predicate(input(huge), none)).toThrow(ConditionCostExceeded);
    expect(() => regex.predicate(input(huge), none)).toThrow(/would cost [\d,]+ on this event; the runtime budget is 1,000,000 per evaluation/);
    expect(matcher).not.toHaveBeenCalled(); // refused by the estimate, not after running
    matcher.mockRestore();
  });

  it('counts comprehensions over actual event lists: nested ones over big lists are refused', () => {
    const nested = compileCondition(requireCondition('event.data.a.exists(x, event.data.a.exists(y, x + y == -1.0))', 'stored'));
    const list = (n: number) => ({ user: 1, now: 0, event: { type: 't', data: { a: Array.from({ length: n }, (_, i) => i) }, time: 0 } });
    expect(nested.predicate(list(50), none)).toBe(false);
    expect(() => nested.predicate(list(3_000), none)).toThrow(ConditionCostExceeded);
  });

  it('without an event (timers, ttl) an over-budget part is false instead of throwing', () => {
    const profileRegex = compileCondition(requireCondition('profile.bio.matches("(a+)+$")', 'stored'));
    expect(profileRegex.predicate({ user: 1, now: 0, profile: { bio: 'a'.repeat(400_000) } }, none)).toBe(false);
    expect(profileRegex.predicate({ user: 1, now: 0, profile: { bio: 'aaa' } }, none)).toBe(true);
  });
});
