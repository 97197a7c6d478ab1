import type { ASTNode } from '@marcbachmann/cel-js';
import { MAX_INSTRUCTIONS_PER_PATTERN_CHAR, regexProgramBound } from './regex-size';

// What one evaluation of a condition may cost, estimated the way cel-go's checker does (checker/cost.go): walk the
// AST once; a literal costs 0, a variable or field read 1, an operator or function call 1 plus its arguments, a
// string function a tenth of a unit per character, a comprehension its range's size times its body; the size of
// each list, map or string comes from a size estimator. At save time (core/model/validate.ts) the estimator assumes
// every string, list and map read from `event` or `profile` holds up to ASSUMED_VALUE_SIZE characters or items, and a
// condition whose estimate exceeds CONDITION_COST_BUDGET is refused. At run time (compile.ts) the same estimate is
// made again with the sizes of the actual event and profile before a size-dependent part runs; over the budget, an
// event's evaluation throws ConditionCostExceeded (the engine dead-letters the event), a timer's is false.
//
// RE2 runs in time input × program size, and the program is the pattern EXPANDED: a counted repetition `x{n}`
// repeats x n times (`.{1000}` is 7 characters and 1,002 instructions), so a literal pattern is charged for the size
// of its program, read from its text (regex-size.ts), and a pattern read from an event or profile for the largest
// program its length allows plus compiling it (a distinct pattern is compiled at each evaluation).
//
// Calibration on this machine (cel-js 8, re2js 2.10): a comprehension costs 40-55 ns per unit; RE2 matching at most
// 31 ns per (input character x program instruction) (9 ns for a 10,000-instruction program), so regex costs a full
// unit there, not cel-go's 0.025 (cel-go assumes RE2 in C++/Go); compiling 2.5-12 µs per instruction; building a
// map literal 170 ns an entry, a list literal 40 ns an item. The budget of 1,000,000 units, the per-expression limit
// Kubernetes uses, is then at most ~55 ms of one partition's time.

export const CONDITION_COST_BUDGET = 1_000_000;
/** Characters of a string, items of a list or entries of a map read from an event or profile, for the save-time estimate. */
export const ASSUMED_VALUE_SIZE = 1_024;

const STRING_TRAVERSAL = 0.1;
const REGEX_PER_CHAR_PER_INSTRUCTION = 1;
const REGEX_COMPILE_PER_INSTRUCTION = 100;
const LIST_LITERAL = 10;
const LIST_ITEM = 1;
const MAP_LITERAL = 30;
const MAP_ENTRY = 4;
/** Per iteration of a comprehension, beside its body: the loop condition and the accumulator step. */
const LOOP_STEP = 2;
const MACROS: ReadonlySet<string> = new Set(['all', 'exists', 'exists_one', 'filter', 'map']);
const STRING_SEARCHES: ReadonlySet<string> = new Set(['contains', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf']);

/** A path into `event` or `profile`; `*` is any key or item (an iteration variable, a computed index). */
type Ref = { root: string; path: string[] };

/** Sizes of the values at a path: the value's own size, and the largest size of its items. */
export interface SizeEstimator {
  size(ref: Ref): number;
}

type Estimate = { cost: number; size: number; itemSize: number; ref: Ref | null };
type Scope = ReadonlyMap<string, Estimate>;

const SCALAR: Omit<Estimate, 'cost'> = { size: 0, itemSize: 0, ref: null };

/** Save-time sizes: event.type is at most 128 characters, anything else under event or profile ASSUMED_VALUE_SIZE. */
export function assumedSizes(assumed = ASSUMED_VALUE_SIZE): SizeEstimator {
  return {
    size: ({ root, path }) => {
      if (root === 'event') {
        if (path.length === 0) return 4;
        if (path[0] === 'type' && path.length === 1) return 128;
        if (path[0] === 'time' && path.length === 1) return 0;
      }
      return assumed;
    },
  };
}

export function estimateCost(root: ASTNode, sizes: SizeEstimator): number {
  return estimate(root, new Map(), sizes).cost;
}

/** The save-time estimate (what validation compares with CONDITION_COST_BUDGET). */
export function staticCost(root: ASTNode): number {
  return estimateCost(root, assumedSizes());
}

function refTo(base: Estimate, key: string): Ref | null {
  return base.ref && { root: base.ref.root, path: [...base.ref.path, key] };
}

function read(ref: Ref | null, fallback: number, sizes: SizeEstimator): Omit<Estimate, 'cost'> {
  if (!ref) return { size: fallback, itemSize: fallback, ref: null };
  return { size: sizes.size(ref), itemSize: sizes.size({ root: ref.root, path: [...ref.path, '*'] }), ref };
}

const traverse = (chars: number) => Math.ceil(chars * STRING_TRAVERSAL);

function estimate(node: ASTNode, scope: Scope, sizes: SizeEstimator): Estimate {
  const of = (child: ASTNode, inner: Scope = scope) => estimate(child, inner, sizes);
  switch (node.op) {
    case 'value': {
      const value = node.args;
      const size = typeof value === 'string' ? value.length : value instanceof Uint8Array ? value.length : 0;
      return { cost: 0, size, itemSize: 0, ref: null };
    }
    case 'id': {
      const bound = scope.get(node.args);
      if (bound) return { ...bound, cost: 1 };
      if (node.args === 'event' || node.args === 'profile') return { cost: 1, ...read({ root: node.args, path: [] }, 0, sizes) };
      return { cost: 1, ...SCALAR };
    }
    case '.':
    case '.?': {
      const base = of(node.args[0]);
      return { cost: base.cost + 1, ...read(refTo(base, node.args[1]), base.itemSize, sizes) };
    }
    case '[]':
    case '[?]': {
      const base = of(node.args[0]);
      const index = of(node.args[1]);
      const key =
        node.args[1].op === 'value' && (typeof node.args[1].args === 'string' || typeof node.args[1].args === 'bigint') ? String(node.args[1].args) : '*';
      return { cost: base.cost + index.cost + 1, ...read(refTo(base, key), base.itemSize, sizes) };
    }
    case 'list': {
      const items = node.args.map((item) => of(item));
      return { cost: sum(items) + LIST_LITERAL + LIST_ITEM * items.length, size: items.length, itemSize: Math.max(0, ...items.map((i) => i.size)), ref: null };
    }
    case 'map': {
      const entries = node.args.flatMap(([key, value]) => [of(key), of(value)]);
      return {
        cost: sum(entries) + MAP_LITERAL + MAP_ENTRY * node.args.length,
        size: node.args.length,
        itemSize: Math.max(0, ...entries.map((e) => e.size)),
        ref: null,
      };
    }
    case '&&':
    case '||':
      return { cost: sum(node.args.map((arg) => of(arg))), ...SCALAR };
    case '?:': {
      const [test, yes, no] = node.args.map((arg) => of(arg));
      const wider = yes.size >= no.size ? yes : no;
      return { cost: test.cost + Math.max(yes.cost, no.cost), size: wider.size, itemSize: Math.max(yes.itemSize, no.itemSize), ref: null };
    }
    case '!_':
    case '-_':
      return { cost: of(node.args).cost + 1, ...SCALAR };
    case 'call':
    case 'rcall':
      return call(node, scope, sizes);
    default: {
      const [left, right] = (node.args as [ASTNode, ASTNode]).map((arg) => of(arg));
      return binary(node.op, left, right);
    }
  }
}

function binary(op: string, left: Estimate, right: Estimate): Estimate {
  const args = left.cost + right.cost;
  switch (op) {
    case 'in':
      return { cost: args + Math.max(1, right.size), ...SCALAR };
    case '+': {
      const size = left.size + right.size;
      return { cost: args + Math.max(1, traverse(size)), size, itemSize: Math.max(left.itemSize, right.itemSize), ref: null };
    }
    case '==':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      return { cost: args + Math.max(1, traverse(Math.min(left.size, right.size))), ...SCALAR };
    default:
      return { cost: args + 1, ...SCALAR };
  }
}

function call(node: Extract<ASTNode, { op: 'call' | 'rcall' }>, scope: Scope, sizes: SizeEstimator): Estimate {
  const of = (child: ASTNode, inner: Scope = scope) => estimate(child, inner, sizes);
  const name = node.args[0];
  const target = node.op === 'rcall' ? node.args[1] : null;
  const args = node.op === 'rcall' ? node.args[2] : node.args[1];

  if (target && MACROS.has(name) && args.length >= 2 && args[0].op === 'id') {
    const range = of(target);
    const variable = { cost: 1, ...read(range.ref && { root: range.ref.root, path: [...range.ref.path, '*'] }, range.itemSize, sizes) };
    const inner = new Map(scope).set(args[0].args as string, variable);
    const bodies = args.slice(1).map((body) => of(body, inner));
    const result = name === 'map' ? bodies[bodies.length - 1].size : range.itemSize;
    const size = name === 'map' || name === 'filter' ? range.size : 0;
    return { cost: range.cost + range.size * (sum(bodies) + LOOP_STEP) + 1, size, itemSize: size ? result : 0, ref: null };
  }
  if (target?.op === 'id' && target.args === 'cel' && name === 'bind' && args.length === 3 && args[0].op === 'id') {
    const value = of(args[1]);
    const body = of(args[2], new Map(scope).set(args[0].args as string, value));
    return { ...body, cost: value.cost + body.cost };
  }
  if (name === 'has') return { cost: 1 + sum(args.map((arg) => of(arg))), ...SCALAR };

  const operands = [...(target ? [of(target)] : []), ...args.map((arg) => of(arg))];
  const argCost = sum(operands);
  const [first, second] = operands;
  if (name === 'matches' && operands.length === 2) {
    const pattern = target ? args[0] : args[1];
    const literal = pattern.op === 'value' && typeof pattern.args === 'string' ? pattern.args : null;
    const program = literal !== null ? regexProgramBound(literal) : 4 + second.size * MAX_INSTRUCTIONS_PER_PATTERN_CHAR;
    const compile = literal !== null ? 0 : program * REGEX_COMPILE_PER_INSTRUCTION;
    return { cost: argCost + compile + (first.size + 1) * program * REGEX_PER_CHAR_PER_INSTRUCTION, ...SCALAR };
  }
  if (STRING_SEARCHES.has(name) && operands.length >= 2) {
    return { cost: argCost + Math.max(1, traverse(first.size + 1) * traverse(Math.max(1, second.size))), ...SCALAR };
  }
  if (name === 'split' && first) return { cost: argCost + 1 + traverse(first.size), size: first.size + 1, itemSize: first.size, ref: null };
  if (name === 'join' && first) {
    const size = first.size * (first.itemSize + (second?.size ?? 0));
    return { cost: argCost + 1 + traverse(size), size, itemSize: 0, ref: null };
  }
  if (name === 'size') return { cost: argCost + 1, ...SCALAR };
  // Conversions and other string functions walk their input once and return at most about its size.
  const widest = operands.reduce((max, o) => (o.size > max.size ? o : max), { cost: 0, ...SCALAR });
  return { cost: argCost + 1 + traverse(widest.size), size: widest.size * (name === 'hex' || name === 'base64' ? 2 : 1), itemSize: widest.itemSize, ref: null };
}

function sum(estimates: Estimate[]): number {
  let total = 0;
  for (const e of estimates) total += e.cost;
  return total;
}

/** Thrown when an event's evaluation would exceed the runtime budget: the engine dead-letters the event. */
export class ConditionCostExceeded extends Error {
  constructor(
    readonly condition: string,
    readonly cost: number,
    readonly budget: number,
  ) {
    super(`condition ${JSON.stringify(condition)} would cost ${formatCost(cost)} on this event; the runtime budget is ${formatCost(budget)} per evaluation`);
    this.name = 'ConditionCostExceeded';
  }
}

export function formatCost(cost: number): string {
  return Number.isFinite(cost) ? Math.round(cost).toLocaleString('en-US') : 'an unbounded amount';
}

/** The largest string, list or map (size) anywhere inside `value`, by an explicit stack (data may nest deeply). */
function largestInside(value: unknown): number {
  let largest = 0;
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') largest = Math.max(largest, item.length);
    else if (Array.isArray(item)) {
      largest = Math.max(largest, item.length);
      for (const child of item) stack.push(child);
    } else if (item instanceof Uint8Array) largest = Math.max(largest, item.length);
    else if (item && typeof item === 'object') {
      const values = Object.values(item);
      largest = Math.max(largest, values.length);
      for (const child of values) stack.push(child);
    }
  }
  return largest;
}

function sizeOf(value: unknown): number {
  if (typeof value === 'string' || Array.isArray(value) || value instanceof Uint8Array) return value.length;
  if (value && typeof value === 'object' && !(value instanceof Date)) return Object.keys(value).length;
  return 0;
}

/** Sizes of the actual values: exact along a known path, the largest value under the root past a `*`. */
export function actualSizes(roots: Record<string, unknown>): SizeEstimator {
  const largest = new Map<string, number>();
  return {
    size: ({ root, path }) => {
      let value = roots[root];
      for (const key of path) {
        if (key === '*') {
          if (!largest.has(root)) largest.set(root, largestInside(roots[root]));
          return largest.get(root)!;
        }
        value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
      }
      return sizeOf(value);
    },
  };
}

/**
 * For a part of a condition whose cost depends on the sizes of its inputs, a check of its actual cost: the estimate
 * with the actual sizes, added to what the evaluation spent so far. Null when the cost is the same whatever the
 * inputs (nothing to check at run time).
 */
export function runtimeCost(node: ASTNode): ((roots: Record<string, unknown>) => number) | null {
  const fixed = estimateCost(node, assumedSizes(1));
  // A part over the budget whatever its inputs can only be in a version saved before the budget: it never runs.
  if (fixed === estimateCost(node, assumedSizes(1_000))) return fixed > CONDITION_COST_BUDGET ? () => fixed : null;
  return (roots) => estimateCost(node, actualSizes(roots));
}

/**
 * Adds `cost` to what the evaluation spent. Within the budget: true. Over it: an event's evaluation throws
 * ConditionCostExceeded (the engine dead-letters the event); without an event (timers, ttl) the part is false.
 */
export function charge(evaluation: { spent: number; input: { event?: unknown } }, cost: number, condition: string): boolean {
  evaluation.spent += cost;
  if (evaluation.spent <= CONDITION_COST_BUDGET) return true;
  if (evaluation.input.event) throw new ConditionCostExceeded(condition, evaluation.spent, CONDITION_COST_BUDGET);
  return false;
}
