import { checkCondition } from './gate';

// What workflow validation (core/model/validate.ts) and the canvas ask of a condition, answered by the one gate
// (core/conditions/gate.ts), so a save refuses exactly what every other route refuses.

/**
 * What a stored version needs to run: null when `text` compiles. The save-time rules (RE2 patterns, cost) are not
 * applied, so versions saved before them keep running (their evaluations are bounded at run time instead).
 */
export function celCompileProblem(text: string): string | null {
  const check = checkCondition(text, 'stored');
  return check.ok ? null : check.problem;
}

/**
 * Null when `text` is a valid condition, otherwise the problem in words (shown on the canvas and in save errors):
 * syntax errors, unknown variables or functions, type errors, a non-boolean result, inCrowd without a crowd name,
 * nesting too deep, a literal too large, a `matches` pattern that is not RE2 or expands too far.
 */
export function celSyntaxProblem(text: string): string | null {
  const check = checkCondition(text);
  return !check.ok && check.code === 'invalid_condition' ? check.problem : null;
}

/**
 * Null when a valid condition's estimated cost per evaluation is within CONDITION_COST_BUDGET, otherwise the estimate
 * and the budget in words (core/conditions/cost.ts says how it is estimated).
 */
export function celCostProblem(text: string): string | null {
  const check = checkCondition(text);
  return !check.ok && check.code === 'condition_too_costly' ? check.problem : null;
}
