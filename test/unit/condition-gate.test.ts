import { RE2JS } from 're2js';
import { describe, expect, it, vi } from 'vitest';
import { compileCondition, requireCondition, type CrowdMembership } from '../../server/conditions/compile';
import { ConditionCostExceeded, CONDITION_COST_BUDGET, staticCost } from '../../core/conditions/cost';
import { checkCondition, MAX_CONDITION_LENGTH } from '../../core/conditions/gate';
import { MAX_REGEX_INSTRUCTIONS, regexProgramBound } from '../../core/conditions/regex-size';
import { AppError } from '../../server/errors';

const none = { has: () => false };
const refusal = (text: string, rules: 'new' | 'stored' = 'new') => {
  const check = checkCondition(text, rules);
  return check.ok ? null : { code: check.code, problem: check.problem };
};
const nestedAll = (depth: number) => `${Array.from({ length: depth }, (_, i) => `[0,1,2].all(x${i}, `).join('')}true${')'.repeat(depth)}`;
const parens = (depth: number) => `${'('.repeat(depth)}user == 1${')'.repeat(depth)}`;
const costOf = (text: string) => {
  const check = checkCondition(text, 'stored');
  if (!check.ok) throw new Error(check.problem);
  return staticCost(check.condition.analysis.parsed.ast);
};

describe('the condition gate', () => {
  it('returns a checked condition with its analysis and estimated cost, once per text', () => {
    const check = checkCondition('profile.plan == "pro" && user % 2 == 0');
    expect(check.ok).toBe(true);
    if (!check.ok) return;
    expect(check.condition.text).toBe('profile.plan == "pro" && user % 2 == 0');
    expect(check.condition.analysis.usage.usesProfile).toBe(true);
    expect(check.condition.cost).toBeGreaterThan(0);
    expect(checkCondition('profile.plan == "pro" && user % 2 == 0')).toBe(check);
    expect(compileCondition(check.condition).predicate({ user: 4, now: 0, profile: { plan: 'pro' } }, none)).toBe(true);
    // @ts-expect-error: only the gate makes a CheckedCondition, so a bare string cannot be compiled (or evaluated)
    expect(() => compileCondition('true')).toThrow();
  });

  it('refuses by length, nesting and literal size with invalid_condition, naming the limit', () => {
    const longest = `user == 1${' || user == 2'.repeat(313)} || user == 200002`;
    expect(longest).toHaveLength(MAX_CONDITION_LENGTH);
    expect(refusal(longest)).toBeNull();
    expect(refusal(`${longest} `)).toEqual({ code: 'invalid_condition', problem: 'condition is 4,097 characters long; the limit is 4,096' });
    expect(refusal(parens(250))).toBeNull();
    for (const depth of [251, 999, 1_001]) {
      expect(refusal(parens(depth))).toEqual({
        code: 'invalid_condition',
        problem: 'condition nests parentheses, calls, lists, maps or field accesses more than 250 levels deep; simplify it (at character 252)',
      });
    }
    expect(refusal(`${'!'.repeat(1_000)}true`)).toBeNull();
    expect(refusal(`${'!'.repeat(1_001)}true`)?.problem).toMatch(/more than 1000 levels of operators/);
    expect(refusal(`user in [${Array.from({ length: 1_000 }, () => 0).join(',')}]`)).toBeNull();
    expect(refusal(`user in [${Array.from({ length: 1_001 }, () => 0).join(',')}]`)?.problem).toMatch(/^a list literal has more than 1,000 items/);
  });

  it('refuses patterns RE2 refuses, and patterns that expand too far before compiling them', () => {
    expect(refusal('profile.s.matches("(?=a)b")')).toMatchObject({ code: 'invalid_condition', problem: expect.stringMatching(/not a valid RE2/) });
    expect(refusal('profile.s.matches("(a)\\\\1")')).toMatchObject({ code: 'invalid_condition', problem: expect.stringMatching(/not a valid RE2/) });
    const huge = `"abc".matches("${'.{1,999}'.repeat(400)}")`;
    const compile = vi.spyOn(RE2JS, 'compile');
    expect(refusal(huge)).toMatchObject({
      code: 'invalid_condition',
      problem: expect.stringMatching(
        /^matches pattern "(\.\{1,999\}){10}…" is too large: it expands to about 798,804 RE2 instructions .* the limit is 10,000$/,
      ),
    });
    // Refused from the pattern's text: compiling it took 5 s and 600 MB.
    expect(compile).not.toHaveBeenCalled();
    compile.mockRestore();
  });

  it('refuses what costs more than the budget with condition_too_costly; a stored version is only parsed', () => {
    expect(refusal(nestedAll(15))).toMatchObject({
      code: 'condition_too_costly',
      problem: expect.stringMatching(/^is estimated to cost [\d,]{11} per evaluation .* the budget is 1,000,000/),
    });
    expect(refusal(nestedAll(8))).toBeNull();
    for (const text of [nestedAll(15), 'profile.s.matches("(?<=a)b")']) {
      expect(refusal(text, 'stored')).toBeNull();
    }
    let thrown: unknown;
    try {
      requireCondition(nestedAll(15), 'new', 'definition.goal.condition', 'Workflow goal.condition');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({
      code: 'condition_too_costly',
      status: 400,
      message: expect.stringMatching(/^Workflow goal\.condition is estimated to cost/),
      details: { path: 'definition.goal.condition', problem: expect.stringMatching(/^is estimated/) },
    });
  });
});

describe('cost estimates that follow the work', () => {
  it('bounds the RE2 program from the pattern text: never below what re2js compiles, counted repetition multiplied', () => {
    const patterns = [
      'x',
      '(a+)+$',
      '^[a-z0-9.]+@[a-z0-9.]+\\.(com|org|net)$',
      '.{1000}',
      `${'.{1000}'.repeat(9)}z`,
      '(?:.{30}){30}',
      '.{1,999}',
      '(?P<x>ab){2,5}',
    ];
    patterns.push('[]a]{5}', '[[:alpha:]]{3,}', '\\Qa.b\\E{3}', '\\p{Greek}{10}', '(?i:abc)', 'a|b|c|d', '(foo|bar|baz)+qux', 'a*?b+?c??');
    for (const pattern of patterns) {
      const compiled = RE2JS.compile(pattern).re2Input.prog.numInst();
      const bound = regexProgramBound(pattern);
      expect(bound, pattern).toBeGreaterThanOrEqual(compiled);
      expect(bound, pattern).toBeLessThanOrEqual(2 * compiled + 10);
    }
    expect(regexProgramBound(`${'.{1000}'.repeat(10)}z`)).toBeGreaterThan(MAX_REGEX_INSTRUCTIONS);
  });

  it("charges the issue's counted repetition for its expanded program: refused at save, not run on a 10,000-character event", () => {
    const text = `event.data.s.matches("${'.{1000}'.repeat(9)}z")`;
    // The pattern-length estimate said ~710,000 units for 10 of them on 10,000 characters; it ran 2.2-4.0 s.
    expect(costOf(text)).toBeGreaterThan(1_025 * 9_000);
    expect(refusal(text)?.code).toBe('condition_too_costly');
    const stored = compileCondition(requireCondition(text, 'stored'));
    const event = { type: 't', data: { s: 'z'.repeat(10_000) }, time: 0 };
    const matcher = vi.spyOn(RE2JS.prototype, 'matcher');
    expect(() => stored.predicate({ user: 1, now: 0, event }, none)).toThrow(ConditionCostExceeded);
    expect(matcher).not.toHaveBeenCalled(); // refused by the estimate; running it took 0.9 s here
    matcher.mockRestore();
    expect(stored.predicate({ user: 1, now: 0, event: { ...event, data: { s: 'short' } } }, none)).toBe(false);
  });

  it('charges a pattern read from an event or profile for the largest program its length allows, and its compilation', () => {
    expect(refusal('"abcdefgh".matches(event.data.p)')?.code).toBe('condition_too_costly');
    const stored = compileCondition(requireCondition('"abcdefgh".matches(event.data.p)', 'stored'));
    expect(stored.predicate({ user: 1, now: 0, event: { type: 't', data: { p: 'c' }, time: 0 } }, none)).toBe(true);
    expect(() => stored.predicate({ user: 1, now: 0, event: { type: 't', data: { p: '.{1,999}'.repeat(30) }, time: 0 } }, none)).toThrow(ConditionCostExceeded);
  });

  it('counts the entries of literals, and never runs a stored part over the budget whatever its inputs', () => {
    const map = (n: number) => `{${Array.from({ length: n }, (_, i) => `${i}: ${i}`).join(', ')}}[user] > 0`;
    expect(costOf(map(400)) - costOf(map(200))).toBeGreaterThanOrEqual(200 * 4);
    // nestedAll(15) with a crowd lookup innermost: had it run (1.9 s), the lookup would have been asked.
    const costly = compileCondition(requireCondition(nestedAll(15).replace('true', 'inCrowd("c")'), 'stored'));
    let lookups = 0;
    const counted: CrowdMembership = { has: () => (lookups++, true) };
    expect(costly.predicate({ user: 1, now: 0 }, counted)).toBe(false); // a timer's evaluation: false, not run
    expect(() => costly.predicate({ user: 1, now: 0, event: { type: 't', data: {}, time: 0 } }, counted)).toThrow(ConditionCostExceeded);
    expect(lookups).toBe(0);
    expect(CONDITION_COST_BUDGET).toBe(1_000_000);
  });
});
