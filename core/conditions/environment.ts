import { Environment } from '@marcbachmann/cel-js';
import { re2Matches } from './regex';

/** The predicate side of `inCrowd("name")`. */
export interface CrowdMembership {
  has(crowdName: string, user: number): boolean;
}

/**
 * The crowd lookup of the evaluation in progress. cel-js function handlers only receive their arguments, and
 * evaluation is synchronous, so the predicate sets this right before it calls into CEL and restores it after.
 */
let membership: { crowds: CrowdMembership; user: number } | null = null;

export function withMembership<T>(crowds: CrowdMembership, user: number, evaluate: () => T): T {
  const outer = membership;
  membership = { crowds, user };
  try {
    return evaluate();
  } finally {
    membership = outer;
  }
}

/**
 * How deep the CEL parser lets parentheses, calls, list and map literals and field accesses nest. cel-js parses
 * recursively, several stack frames a level: 1,000 nested parentheses overflowed the call stack here, 250 (its
 * default) do not. Chains of operators (`!`, `&&`, …) are bounded separately by MAX_CONDITION_DEPTH.
 */
export const MAX_CONDITION_NESTING = 250;
// cel-js counts the condition as a whole as one level, hence + 1 where it is configured below.
/** Items of one list literal, entries of one map literal (the 4,096-character limit already keeps them far smaller). */
export const MAX_LITERAL_ITEMS = 1_000;

/**
 * The one CEL environment of conditions. `user` is a CEL int (not uint) so that `user == 5` and `user % 10 == 0`
 * type-check as people write them; `now` is a timestamp; `event` and `profile` are maps whose JSON numbers are
 * CEL doubles (the CEL convention for JSON), which compare equal to ints (`profile.age == 30`). List literals may
 * mix types (`profile.score in [1, 2.5]`), as profile values from JSON do.
 */
export const conditionEnvironment = new Environment({
  homogeneousAggregateLiterals: false,
  limits: { maxDepth: MAX_CONDITION_NESTING + 1, maxListElements: MAX_LITERAL_ITEMS, maxMapEntries: MAX_LITERAL_ITEMS },
})
  .registerVariable('event', 'map', { description: 'The event being applied: type, data (map), time (timestamp)' })
  .registerVariable('profile', 'map', { description: "The user's profile attributes" })
  .registerVariable('now', 'google.protobuf.Timestamp', { description: 'The current time' })
  .registerVariable('user', 'int', { description: 'The user id' })
  .registerFunction('inCrowd(string): bool', (name: string) => (membership ? membership.crowds.has(name, membership.user) : false), {
    description: 'Whether the user belongs to the tenant crowd of that name',
  })
  // CEL's function form of matches, with RE2 semantics; evaluation rewrites the method form to it (see regex.ts).
  .registerFunction('matches(string, string): bool', re2Matches, { description: 'Whether the RE2 pattern (second) matches part of the text (first)' });
