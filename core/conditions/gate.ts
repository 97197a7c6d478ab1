// The one gate every condition passes before it can be compiled or evaluated, whatever route it came through: a
// workflow save (branch, timer, entry and goal conditions), an audience estimate, an explain of a draft. It returns a
// CheckedCondition, the only thing compileCondition (server/conditions/compile.ts) accepts, so a condition that
// skipped the gate does not type-check where it would be evaluated. Browser-safe (the canvas shows the same problems).
import { analyzeCondition, type AnalyzedCondition } from './analyze';
import { ASSUMED_VALUE_SIZE, CONDITION_COST_BUDGET, formatCost, staticCost } from './cost';
import { regexProblems } from './regex';

/** The longest condition, in characters (docs/limits.md "Input limits"; the workflow schema says the same). */
export const MAX_CONDITION_LENGTH = 4_096;

declare const checked: unique symbol;

/** A condition that passed checkCondition. Only this module makes one (the brand has no runtime value to forge). */
export type CheckedCondition = {
  readonly text: string;
  readonly analysis: AnalyzedCondition;
  /** The save-time estimate of one evaluation (core/conditions/cost.ts). */
  readonly cost: number;
  readonly [checked]: true;
};

/** The two ways a condition is refused; each route answers them with the same code (server/errors.ts). */
export type ConditionRefusal = 'invalid_condition' | 'condition_too_costly';

export type ConditionCheck = { ok: true; condition: CheckedCondition } | { ok: false; code: ConditionRefusal; problem: string };

/**
 * `new`: everything a condition sent now must pass (length, syntax and types, nesting depth, literal sizes, RE2
 * patterns, the cost budget). `stored`: what a version saved before the RE2 and cost rules needs to run (length,
 * syntax and types, depth); its patterns and cost are then bounded per evaluation instead (an invalid pattern is
 * false, an evaluation over the budget does not run).
 */
export type CheckRules = 'new' | 'stored';

const checks: Record<CheckRules, Map<string, ConditionCheck>> = { new: new Map(), stored: new Map() };
const MAX_CACHED_CHECKS = 1_000;

/** Checks `text` (cached by text: a route may see the same condition many times). */
export function checkCondition(text: string, rules: CheckRules = 'new'): ConditionCheck {
  const cache = checks[rules];
  const cached = cache.get(text);
  if (cached) return cached;
  const result = check(text, rules);
  if (cache.size >= MAX_CACHED_CHECKS) cache.delete(cache.keys().next().value!);
  cache.set(text, result);
  return result;
}

function check(text: string, rules: CheckRules): ConditionCheck {
  if (text.length > MAX_CONDITION_LENGTH) {
    return invalid(`condition is ${text.length.toLocaleString('en-US')} characters long; the limit is ${MAX_CONDITION_LENGTH.toLocaleString('en-US')}`);
  }
  const analysis = analyzeCondition(text);
  if (!analysis.ok) return invalid(analysis.problem);
  const { ast } = analysis.condition.parsed;
  if (rules === 'new') {
    const [patternProblem] = regexProblems(ast);
    if (patternProblem) return invalid(patternProblem);
  }
  const cost = staticCost(ast);
  if (rules === 'new' && cost > CONDITION_COST_BUDGET) {
    return {
      ok: false,
      code: 'condition_too_costly',
      problem:
        `is estimated to cost ${formatCost(cost)} per evaluation (with strings and lists of event and profile values up to ${ASSUMED_VALUE_SIZE.toLocaleString('en-US')} long); ` +
        `the budget is ${formatCost(CONDITION_COST_BUDGET)}. Nest fewer comprehensions or use shorter patterns`,
    };
  }
  return { ok: true, condition: { text, analysis: analysis.condition, cost } as CheckedCondition };
}

function invalid(problem: string): ConditionCheck {
  return { ok: false, code: 'invalid_condition', problem };
}

/** The refusal as a route's error message, naming where the condition was (`condition`, `definition.steps[0]…`). */
export function refusalMessage(refusal: Extract<ConditionCheck, { ok: false }>, where = 'condition'): string {
  if (where === 'condition')
    return refusal.code === 'invalid_condition' ? `The condition is not valid: ${refusal.problem}` : `The condition ${refusal.problem}`;
  return refusal.code === 'invalid_condition' ? `${where} is not a valid condition: ${refusal.problem}` : `${where} ${refusal.problem}`;
}
