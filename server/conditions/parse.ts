import { analyzeCondition } from './analyze';
import { ASSUMED_VALUE_SIZE, CONDITION_COST_BUDGET, formatCost, staticCost } from './cost';
import { regexProblems } from './regex';

/**
 * What a stored version needs to run: null when `text` compiles. The save-time rules (RE2 patterns, cost) are not
 * applied, so versions saved before them keep running (their evaluations are bounded at run time instead).
 */
export function celCompileProblem(text: string): string | null {
  const analysis = analyzeCondition(text);
  return analysis.ok ? null : analysis.problem;
}

/**
 * Null when `text` is a valid condition, otherwise the problem in words (shown on the canvas and in save errors):
 * syntax errors, unknown variables or functions, type errors, a non-boolean result, inCrowd without a crowd name,
 * a `matches` pattern that is not RE2.
 * Browser-safe: it parses and type-checks with cel-js only.
 */
export function celSyntaxProblem(text: string): string | null {
  const analysis = analyzeCondition(text);
  if (!analysis.ok) return analysis.problem;
  // Saved conditions must be valid RE2; compiling (older versions included) only makes a bad pattern false.
  return regexProblems(analysis.condition.parsed.ast)[0] ?? null;
}

/**
 * Null when a valid condition's estimated cost per evaluation is within CONDITION_COST_BUDGET, otherwise the estimate
 * and the budget in words (server/conditions/cost.ts says how it is estimated).
 */
export function celCostProblem(text: string): string | null {
  const analysis = analyzeCondition(text);
  if (!analysis.ok) return null;
  const cost = staticCost(analysis.condition.parsed.ast);
  if (cost <= CONDITION_COST_BUDGET) return null;
  return (
    `is estimated to cost ${formatCost(cost)} per evaluation (with strings and lists of event and profile values up to ${ASSUMED_VALUE_SIZE.toLocaleString('en-US')} long); ` +
    `the budget is ${formatCost(CONDITION_COST_BUDGET)}. Nest fewer comprehensions or use shorter patterns`
  );
}
