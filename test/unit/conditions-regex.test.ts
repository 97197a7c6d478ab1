import { describe, expect, it } from 'vitest';
import { compileCondition, requireCondition, type ConditionInput, type CrowdMembership } from '../../server/conditions/compile';
import { celSyntaxProblem } from '../../core/conditions/parse';

const none: CrowdMembership = { has: () => false };
const withText = (s: unknown): ConditionInput => ({ user: 1, now: 0, event: { type: 't', data: { s }, time: 0 } });

describe('matches has RE2 semantics (linear time)', () => {
  it('answers the catastrophic-backtracking pattern at once, in method and function form', () => {
    // JavaScript's backtracking RegExp took 9 s at 27 a's and doubles with each more: at 100 this test would time out.
    const evil = 'a'.repeat(100) + 'b';
    expect(compileCondition(requireCondition('event.data.s.matches("(a+)+$")')).predicate(withText(evil), none)).toBe(false);
    expect(compileCondition(requireCondition('matches(event.data.s, "(a+)+$")')).predicate(withText(evil), none)).toBe(false);
    expect(compileCondition(requireCondition('event.data.s.matches("(a+)+$")')).predicate(withText('aaa'), none)).toBe(true);
  });

  it('matches anywhere unless anchored, inside comprehensions too', () => {
    const input = withText('order-1234');
    expect(compileCondition(requireCondition('event.data.s.matches("[0-9]+")')).predicate(input, none)).toBe(true);
    expect(compileCondition(requireCondition('event.data.s.matches("^[0-9]+$")')).predicate(input, none)).toBe(false);
    expect(compileCondition(requireCondition('["x", event.data.s].exists(v, v.matches("^order-"))')).predicate(input, none)).toBe(true);
    expect(compileCondition(requireCondition('event.data.s.matches("(?i)ORDER")')).predicate(input, none)).toBe(true);
  });

  it('is false (never an exception) for a missing or non-string value', () => {
    expect(compileCondition(requireCondition('event.data.s.matches("a")')).predicate(withText(undefined), none)).toBe(false);
    expect(compileCondition(requireCondition('event.data.s.matches("a")')).predicate(withText(5), none)).toBe(false);
    expect(compileCondition(requireCondition('!event.data.s.matches("a")')).predicate(withText(5), none)).toBe(true);
  });

  it('refuses at save a pattern RE2 does not accept, naming the pattern and why', () => {
    expect(celSyntaxProblem('event.data.s.matches("(?<=a)b")')).toMatch(/matches pattern "\(\?<=a\)b" is not a valid RE2 regular expression/);
    expect(celSyntaxProblem('matches(event.data.s, "(a")')).toMatch(/missing closing \)/);
    expect(celSyntaxProblem('event.data.s.matches("(a)\\\\1")')).toMatch(/not a valid RE2/);
    expect(celSyntaxProblem('event.data.s.matches("^[a-z]+$")')).toBeNull();
  });
});
