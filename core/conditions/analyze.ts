import type { ASTNode, ParseResult } from '@marcbachmann/cel-js';
import { conditionEnvironment, MAX_CONDITION_NESTING } from './environment';
import { planOf, type BitmapPlan, type PlanScalar } from './plan';

/** What a condition reads, found by walking its AST once at compile time. */
export type ConditionUsage = {
  usesEvent: boolean;
  usesProfile: boolean;
  usesNow: boolean;
  usesUser: boolean;
  /** False when `event` is only read as `event.type` / `event.data…`, so no timestamp need be built per event. */
  usesEventTime: boolean;
  crowds: string[];
  profileFields: string[];
};

export type AnalyzedCondition = { parsed: ParseResult; usage: ConditionUsage; plan: BitmapPlan | null };

export type AnalysisResult = { ok: true; condition: AnalyzedCondition } | { ok: false; problem: string };

type CelError = { summary?: string; message: string; range?: { start: number } };

/** cel-js's parser limits (core/conditions/environment.ts), in the words of a condition's author. */
const LIMITS: Record<string, (limit: string) => string> = {
  maxDepth: () => `condition nests parentheses, calls, lists, maps or field accesses more than ${MAX_CONDITION_NESTING} levels deep; simplify it`,
  maxListElements: (limit) => `a list literal has more than ${limit} items`,
  maxMapEntries: (limit) => `a map literal has more than ${limit} entries`,
  maxAstNodes: (limit) => `condition has more than ${limit} parts`,
  maxCallArguments: (limit) => `a call has more than ${limit} arguments`,
};

function describe(error: CelError): string {
  const summary = error.summary ?? error.message.split('\n')[0];
  const limit = /^Exceeded (\w+) \((\d+)\)/.exec(summary);
  const words = limit && LIMITS[limit[1]] ? LIMITS[limit[1]](Number(limit[2]).toLocaleString('en-US')) : summary;
  return error.range ? `${words} (at character ${error.range.start + 1})` : words;
}

/** Most levels of operators a condition may nest (`!!true` has 2): cel-js parses, checks and evaluates recursively, and
 * a deeper tree (thousands of `!` or `&&` in a row) would overflow the call stack (4,000 `!` did in the server). */
export const MAX_CONDITION_DEPTH = 1000;
const tooDeep = `condition is nested too deeply (more than ${MAX_CONDITION_DEPTH} levels of operators such as !, -, && or ||); simplify it`;

/** Parses and type-checks `text` against the condition environment; returns the first problem in words. */
export function analyzeCondition(text: string): AnalysisResult {
  if (text.trim() === '') return { ok: false, problem: 'condition is empty (write true to always match)' };
  let parsed: ParseResult;
  try {
    parsed = conditionEnvironment.parse(text);
  } catch (error) {
    return { ok: false, problem: error instanceof RangeError ? tooDeep : describe(error as CelError) };
  }
  // The deepest path ends in a value or a name, which is no operator.
  if (astDepth(parsed.ast) - 1 > MAX_CONDITION_DEPTH) return { ok: false, problem: tooDeep };
  const checked = parsed.check();
  if (!checked.valid) return { ok: false, problem: describe(checked.error as CelError) };
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    return { ok: false, problem: `condition must be true or false, but it gives a ${checked.type}` };
  }
  const usage: ConditionUsage = { usesEvent: false, usesProfile: false, usesNow: false, usesUser: false, usesEventTime: false, crowds: [], profileFields: [] };
  const crowdProblem = collectUsage(parsed.ast, usage);
  if (crowdProblem) return { ok: false, problem: crowdProblem };
  return { ok: true, condition: { parsed, usage, plan: planOf(parsed.ast) } };
}

function astDepth(root: ASTNode): number {
  let deepest = 0;
  const stack: [ASTNode, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    deepest = Math.max(deepest, depth);
    for (const child of childNodes(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function childNodes(node: ASTNode): ASTNode[] {
  const found: ASTNode[] = [];
  const visit = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object' && 'op' in value && 'args' in value) found.push(value as ASTNode);
  };
  if (node.op !== 'value' && node.op !== 'id') visit(node.args);
  return found;
}

/** Fills `usage`; returns a problem when inCrowd is not given a crowd name literal (the engine must know which crowds to load). */
function collectUsage(root: ASTNode, usage: ConditionUsage): string | null {
  const crowds = new Set<string>();
  const fields = new Set<string>();
  let eventReads = 0;
  let typeOrDataReads = 0;
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const eventField = memberOf(node, 'event');
    if (eventField === 'type' || eventField === 'data') typeOrDataReads++;
    if (node.op === 'id') {
      if (node.args === 'event') (usage.usesEvent = true), eventReads++;
      if (node.args === 'profile') usage.usesProfile = true;
      if (node.args === 'now') usage.usesNow = true;
      if (node.args === 'user') usage.usesUser = true;
    }
    const field = profileField(node);
    if (field !== null) fields.add(field);
    if (node.op === 'call' && node.args[0] === 'inCrowd') {
      const name = stringLiteral(node.args[1][0]);
      if (name === null || name === '') return 'inCrowd() takes a crowd name in quotes, e.g. inCrowd("vip")';
      crowds.add(name);
    }
    stack.push(...childNodes(node));
  }
  usage.crowds = [...crowds].sort();
  usage.profileFields = [...fields].sort();
  usage.usesEventTime = eventReads > typeOrDataReads;
  return null;
}

function stringLiteral(node: ASTNode | undefined): string | null {
  return node?.op === 'value' && typeof node.args === 'string' ? node.args : null;
}

/** `variable.x` or `variable["x"]` → "x". */
function memberOf(node: ASTNode, variable: string): string | null {
  if (node.op === '.' && node.args[0].op === 'id' && node.args[0].args === variable) return node.args[1];
  if (node.op === '[]' && node.args[0].op === 'id' && node.args[0].args === variable) return stringLiteral(node.args[1]);
  return null;
}

/** `profile.x` or `profile["x"]` → "x". */
export function profileField(node: ASTNode): string | null {
  return memberOf(node, 'profile');
}

/** A string, bool, int or double literal (optionally negated), as the profile index keys it. */
export function scalarLiteral(node: ASTNode): PlanScalar | null {
  if (node.op === 'value') {
    const value = node.args;
    if (typeof value === 'string' || typeof value === 'boolean') return value;
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    return null;
  }
  if (node.op === '-_' && node.args.op === 'value') {
    const value = node.args.args;
    if (typeof value === 'number' || typeof value === 'bigint') return -Number(value);
  }
  return null;
}

/** `profile.f == literal` (either order) → [field, value]. */
export function profileEquality(node: ASTNode): [string, PlanScalar] | null {
  if (node.op !== '==') return null;
  const [left, right] = node.args;
  for (const [fieldSide, valueSide] of [
    [left, right],
    [right, left],
  ]) {
    const field = profileField(fieldSide);
    const value = scalarLiteral(valueSide);
    if (field !== null && value !== null) return [field, value];
  }
  return null;
}

/** `event.type == "literal"` (either side) → the literal: the most common event test, answered without cel-js. */
export function eventTypeEquality(node: ASTNode): string | null {
  if (node.op !== '==') return null;
  const [left, right] = node.args;
  for (const [fieldSide, valueSide] of [
    [left, right],
    [right, left],
  ]) {
    const literal = stringLiteral(valueSide);
    if (memberOf(fieldSide, 'event') === 'type' && literal !== null) return literal;
  }
  return null;
}

export type Relational = '<' | '<=' | '>' | '>=';
const MIRRORED: Record<Relational, Relational> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/**
 * `event.data.f <op> n` or `n <op> event.data.f` (a relational operator, a number literal that is exact as a double)
 * → the comparison with the field on the left: answered without cel-js, which compares a number field numerically
 * and makes anything else (missing, a string, null) false.
 */
export function eventDataComparison(node: ASTNode): { field: string; op: Relational; value: number } | null {
  if (!(node.op in MIRRORED)) return null;
  const op = node.op as Relational;
  const [left, right] = node.args as [ASTNode, ASTNode];
  const direct = [eventDataField(left), exactNumber(right)] as const;
  if (direct[0] !== null && direct[1] !== null) return { field: direct[0], op, value: direct[1] };
  const mirrored = [eventDataField(right), exactNumber(left)] as const;
  if (mirrored[0] !== null && mirrored[1] !== null) return { field: mirrored[0], op: MIRRORED[op], value: mirrored[1] };
  return null;
}

/** `event.data.f` or `event.data["f"]` → "f". */
function eventDataField(node: ASTNode): string | null {
  if (node.op !== '.' && node.op !== '[]') return null;
  if (memberOf(node.args[0], 'event') !== 'data') return null;
  return node.op === '.' ? node.args[1] : stringLiteral(node.args[1]);
}

function exactNumber(node: ASTNode): number | null {
  const value = scalarLiteral(node);
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER ? value : null;
}

/** `profile.f in [literals]` → [field, values]. */
export function profileMembership(node: ASTNode): [string, PlanScalar[]] | null {
  if (node.op !== 'in' || node.args[1].op !== 'list') return null;
  const field = profileField(node.args[0]);
  if (field === null) return null;
  const values = node.args[1].args.map(scalarLiteral);
  return values.every((value) => value !== null) ? [field, values as PlanScalar[]] : null;
}
