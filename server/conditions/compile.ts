import { serialize, type ASTNode } from '@marcbachmann/cel-js';
import { AppError } from '../errors';
import {
  eventDataComparison,
  eventTypeEquality,
  profileEquality,
  profileMembership,
  type ConditionUsage,
  type Relational,
} from '../../core/conditions/analyze';
import { conditionEnvironment, withMembership, type CrowdMembership } from '../../core/conditions/environment';
import { charge, runtimeCost } from '../../core/conditions/cost';
import { checkCondition, refusalMessage, type CheckedCondition, type CheckRules } from '../../core/conditions/gate';
import { narrowingPlanOf, type BitmapPlan, type PlanScalar } from '../../core/conditions/plan';
import { profileComparison } from './profile-predicate';
import { withRe2Matches } from '../../core/conditions/regex';

export type ConditionEvent = { type: string; data: Record<string, unknown>; time: number /* epoch ms */ };
export type ConditionInput = { user: number; now: number; event?: ConditionEvent; profile?: Record<string, unknown> };

export type { BitmapPlan, PlanScalar } from '../../core/conditions/plan';
export type { CrowdMembership } from '../../core/conditions/environment';
export type { CheckedCondition } from '../../core/conditions/gate';
export { evaluatePlan, type PlanResolver } from './plan-eval';

export interface CompiledCondition {
  text: string;
  /**
   * Missing values (no event, no profile, missing field, type mismatch) make a comparison false. Throws only
   * ConditionCostExceeded, when an event's evaluation would exceed the runtime cost budget.
   */
  predicate(input: ConditionInput, crowds: CrowdMembership): boolean;
  /** Non-null only when the condition uses nothing but inCrowd, profile ==, !=, in, <, <=, >, >=, has(), timestamp comparisons, `user` compared
   * with int literals, &&, ||, !, true/false. */
  plan: BitmapPlan | null;
  /** The plan of the conjuncts that have one (plan.ts narrowingPlanOf): the users a per-user pass need look at. */
  narrowing: BitmapPlan | null;
  usesEvent: boolean;
  usesProfile: boolean;
  usesNow: boolean;
  crowds: string[];
  profileFields: string[];
}

/** One evaluation: the input, its crowd lookup and the CEL context, built on first use by a CEL leaf. */
type Evaluation = { input: ConditionInput; crowds: CrowdMembership; context: Record<string, unknown> | null; spent: number };
type PredicateNode = (evaluation: Evaluation) => boolean;

const NOTHING: Record<string, unknown> = Object.freeze({});

/** CEL int literals became numbers and profiles are JSON, so `===` is CEL's `==` on scalars (a string never equals a number). */
function sameScalar(actual: unknown, expected: PlanScalar): boolean {
  if (typeof actual === 'bigint') return typeof expected === 'number' && Number(actual) === expected;
  return actual === expected;
}

function celContext(evaluation: Evaluation, usage: ConditionUsage): Record<string, unknown> {
  const { input } = evaluation;
  const context: Record<string, unknown> = { profile: input.profile ?? NOTHING };
  if (usage.usesEvent) {
    const event = input.event;
    // A Date per event is measurable; it is built only for conditions that can read event.time.
    const data = event?.data ?? NOTHING;
    context.event = !event ? NOTHING : usage.usesEventTime ? { type: event.type, data, time: new Date(event.time) } : { type: event.type, data };
  }
  if (usage.usesNow) context.now = new Date(input.now);
  if (usage.usesUser) context.user = BigInt(input.user);
  return context;
}

/** `event.data[field] <op> value`: a number field compares, anything else (no event, missing, not a number) is false. */
function dataComparison(field: string, op: Relational, value: number): PredicateNode {
  const read = (evaluation: Evaluation) => evaluation.input.event?.data[field];
  switch (op) {
    case '<':
      return (evaluation) => {
        const actual = read(evaluation);
        return typeof actual === 'number' && actual < value;
      };
    case '<=':
      return (evaluation) => {
        const actual = read(evaluation);
        return typeof actual === 'number' && actual <= value;
      };
    case '>':
      return (evaluation) => {
        const actual = read(evaluation);
        return typeof actual === 'number' && actual > value;
      };
    case '>=':
      return (evaluation) => {
        const actual = read(evaluation);
        return typeof actual === 'number' && actual >= value;
      };
  }
}

/**
 * Boolean connectives, the plan-shaped leaves (inCrowd, profile ==/in) and the common event tests
 * (`event.type == "…"`, `event.data.f <op> n`) run as JS; every other subexpression is a CEL leaf evaluated by
 * cel-js, where a missing value or type mismatch makes that leaf false. So a comparison with a missing value is false
 * and `!` of it is true, exactly as the bitmap plan computes it.
 */
function predicateOf(node: ASTNode, usage: ConditionUsage): PredicateNode {
  switch (node.op) {
    case 'value':
      if (typeof node.args === 'boolean') {
        const constant = node.args;
        return () => constant;
      }
      break;
    case '!_': {
      const arg = predicateOf(node.args, usage);
      return (evaluation) => !arg(evaluation);
    }
    case '&&': {
      const [left, right] = node.args.map((child) => predicateOf(child, usage));
      return (evaluation) => left(evaluation) && right(evaluation);
    }
    case '||': {
      const [left, right] = node.args.map((child) => predicateOf(child, usage));
      return (evaluation) => left(evaluation) || right(evaluation);
    }
    case 'call': {
      const name = node.args[0] === 'inCrowd' && node.args[1][0]?.op === 'value' ? node.args[1][0].args : null;
      if (typeof name === 'string') return (evaluation) => evaluation.crowds.has(name, evaluation.input.user);
      break;
    }
    case '==': {
      const equality = profileEquality(node);
      if (equality) {
        const [field, value] = equality;
        return (evaluation) => sameScalar(evaluation.input.profile?.[field], value);
      }
      const eventType = eventTypeEquality(node);
      // Without an event CEL finds no `event.type` and the leaf is false; so is `undefined === type`.
      if (eventType !== null) return (evaluation) => evaluation.input.event?.type === eventType;
      break;
    }
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const comparison = eventDataComparison(node);
      if (comparison) return dataComparison(comparison.field, comparison.op, comparison.value);
      const profileTest = profileComparison(node);
      if (profileTest) return (evaluation) => profileTest(evaluation.input.profile);
      break;
    }
    case 'in': {
      const membership = profileMembership(node);
      if (membership) {
        const [field, values] = membership;
        return (evaluation) => {
          const actual = evaluation.input.profile?.[field];
          return values.some((value) => sameScalar(actual, value));
        };
      }
      break;
    }
  }
  return celLeaf(node, usage);
}

function celLeaf(node: ASTNode, usage: ConditionUsage): PredicateNode {
  const evaluate = conditionEnvironment.parse(serialize(withRe2Matches(node)));
  const cost = runtimeCost(node);
  const text = cost && serialize(node);
  return (evaluation) => {
    evaluation.context ??= celContext(evaluation, usage);
    // Checked before evaluating, with the actual sizes of event and profile (core/conditions/cost.ts).
    if (cost && !charge(evaluation, cost(evaluation.context), text!)) return false;
    // A missing value surfaces as a thrown cel-js error; capturing its stack trace cost ~7x the evaluation itself.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return withMembership(evaluation.crowds, evaluation.input.user, () => evaluate(evaluation.context!)) === true;
    } catch {
      return false;
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** Module-level, not app state: a bounded memo of a pure function (a checked text → its frozen compiled condition). */
const compiledByText = new Map<string, CompiledCondition>();
const MAX_CACHED_CONDITIONS = 10_000;

/**
 * `text` through the gate (core/conditions/gate.ts), for a route or a stored version: throws 400
 * `invalid_condition` or `condition_too_costly` naming the problem, where it is in words (`label`) and `path`, the
 * body field it came in.
 */
export function requireCondition(text: string, rules: CheckRules = 'new', path = 'condition', label = path): CheckedCondition {
  const check = checkCondition(text, rules);
  if (check.ok) return check.condition;
  throw new AppError(check.code, refusalMessage(check, label), { path, problem: check.problem });
}

/** Compiles a checked condition once (cached by text): only the gate makes a CheckedCondition. */
export function compileCondition(condition: CheckedCondition): CompiledCondition {
  const { text } = condition;
  const cached = compiledByText.get(text);
  if (cached) return cached;
  const { parsed, usage, plan } = condition.analysis;
  const root = predicateOf(parsed.ast, usage);
  // Frozen because the cache hands the same object to every workflow version that uses this text.
  const compiled: CompiledCondition = deepFreeze({
    text,
    predicate: (input: ConditionInput, crowds: CrowdMembership) => root({ input, crowds, context: null, spent: 0 }),
    plan,
    narrowing: plan ?? narrowingPlanOf(parsed.ast),
    usesEvent: usage.usesEvent,
    usesProfile: usage.usesProfile,
    usesNow: usage.usesNow,
    crowds: usage.crowds,
    profileFields: usage.profileFields,
  });
  if (compiledByText.size >= MAX_CACHED_CONDITIONS) compiledByText.delete(compiledByText.keys().next().value!);
  compiledByText.set(text, compiled);
  return compiled;
}
