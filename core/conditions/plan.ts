// Bitmap plans: the part of the condition language that runs as bitmap algebra over crowds, ranges of user IDs and the
// tenant's profile index (server/profiles/index-*.ts) instead of a per-user loop. A plan gives exactly the users for which the
// per-user predicate is true, including CEL's "a missing value or a type mismatch makes the comparison false".
// Browser-safe (the canvas validates conditions with it): evaluation, which needs roaring, is in plan-eval.ts.
import type { ASTNode } from '@marcbachmann/cel-js';
import { celTimestampMs, pathKey } from '../profile-paths';

export type PlanScalar = string | number | boolean;
export type PlanComparison = '<' | '<=' | '>' | '>=';

/**
 * `userRange` is the user IDs from `from` to `to`, both included (never empty: an empty range is `none`).
 * Profile leaves name a path key (server/profiles/index-tenant.ts pathKey: a top-level attribute is its own name).
 * `profileCmp` compares numbers, `profileTime` compares `timestamp(profile.x)` with a timestamp literal (ms).
 */
export type BitmapPlan =
  | { op: 'all' }
  | { op: 'none' }
  | { op: 'crowd'; name: string }
  | { op: 'profileEq'; field: string; value: PlanScalar }
  | { op: 'profileIn'; field: string; values: PlanScalar[] }
  | { op: 'profileHas'; field: string }
  | { op: 'profileCmp'; field: string; cmp: PlanComparison; value: number }
  | { op: 'profileTime'; field: string; cmp: PlanComparison | '=='; at: number }
  | { op: 'userRange'; from: number; to: number }
  | { op: 'and' | 'or'; args: BitmapPlan[] }
  | { op: 'not'; arg: BitmapPlan };

export type ProfileLeaf = Extract<BitmapPlan, { field: string }>;

function stringLiteral(node: ASTNode | undefined): string | null {
  return node?.op === 'value' && typeof node.args === 'string' ? node.args : null;
}

/** `profile.a.b`, `profile["a"].b` … → ["a", "b"]; null for anything else. */
export function profilePath(node: ASTNode): string[] | null {
  const segments: string[] = [];
  let at = node;
  while (at.op === '.' || at.op === '[]') {
    const key = at.op === '.' ? (at.args[1] as string) : stringLiteral(at.args[1]);
    if (typeof key !== 'string') return null;
    segments.unshift(key);
    at = at.args[0];
  }
  return at.op === 'id' && at.args === 'profile' && segments.length > 0 ? segments : null;
}

/** A string, bool or number literal (optionally negated) whose value a double holds exactly. */
function literal(node: ASTNode): PlanScalar | null {
  let value: unknown = node.op === 'value' ? node.args : node.op === '-_' && node.args.op === 'value' ? node.args.args : undefined;
  if (node.op === '-_') {
    if (typeof value === 'number') value = -value;
    else if (typeof value === 'bigint') value = -value;
    else return null;
  }
  if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') return value;
  // Past 2^53 an int literal is not a double: CEL compares it exactly, the index could not.
  if (typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= -BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  return null;
}

/** `timestamp(profile.x)` → the path of x. */
function timestampOfProfile(node: ASTNode): string[] | null {
  return node.op === 'call' && node.args[0] === 'timestamp' && node.args[1].length === 1 ? profilePath(node.args[1][0]) : null;
}

/** `timestamp("literal")` → its epoch ms (NaN when cel-js would refuse it: the comparison is false for everyone). */
function timestampLiteral(node: ASTNode): number | null {
  if (node.op !== 'call' || node.args[0] !== 'timestamp' || node.args[1].length !== 1) return null;
  const text = stringLiteral(node.args[1][0]);
  return text === null ? null : (celTimestampMs(text) ?? Number.NaN);
}

const MIRRORED: Record<PlanComparison, PlanComparison> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/** `field <op> literal` or `literal <op> field` with the field on the left. */
function sides<T, V>(node: ASTNode, field: (n: ASTNode) => T | null, value: (n: ASTNode) => V | null): { field: T; value: V; mirrored: boolean } | null {
  const [left, right] = node.args as [ASTNode, ASTNode];
  const direct = [field(left), value(right)] as const;
  if (direct[0] !== null && direct[1] !== null) return { field: direct[0], value: direct[1], mirrored: false };
  const swapped = [field(right), value(left)] as const;
  if (swapped[0] !== null && swapped[1] !== null) return { field: swapped[0], value: swapped[1], mirrored: true };
  return null;
}

/** The highest user ID: users are uint32. */
const MAX_USER = 0xffff_ffff;

/** A CEL int literal, optionally negated (doubles and uints stay per user: cel-js compares them its own way). */
function intLiteral(node: ASTNode): bigint | null {
  if (node.op === 'value') return typeof node.args === 'bigint' ? node.args : null;
  return node.op === '-_' && node.args.op === 'value' && typeof node.args.args === 'bigint' ? -node.args.args : null;
}

function isUser(node: ASTNode): true | null {
  return node.op === 'id' && node.args === 'user' ? true : null;
}

/** The users from `from` to `to` (clamped to uint32), or none when no user ID lies between them. */
function userRange(from: bigint, to: bigint): BitmapPlan {
  const low = from < 0n ? 0n : from;
  const high = to > BigInt(MAX_USER) ? BigInt(MAX_USER) : to;
  return low > high ? { op: 'none' } : { op: 'userRange', from: Number(low), to: Number(high) };
}

/** `user <op> n` with an int literal n (either side): a range of user IDs. */
function userComparisonPlan(node: ASTNode): BitmapPlan | null {
  const found = sides(node, isUser, intLiteral);
  if (!found) return null;
  const cmp = found.mirrored ? MIRRORED[node.op as PlanComparison] : (node.op as PlanComparison);
  const bound = found.value;
  switch (cmp) {
    case '<':
      return userRange(0n, bound - 1n);
    case '<=':
      return userRange(0n, bound);
    case '>':
      return userRange(bound + 1n, BigInt(MAX_USER));
    case '>=':
      return userRange(bound, BigInt(MAX_USER));
  }
}

/** `user == n` and `user in [n, …]` with int literals: single-user ranges. */
function userEqualityPlan(node: ASTNode): BitmapPlan | null {
  const found = sides(node, isUser, intLiteral);
  return found && userRange(found.value, found.value);
}

function comparisonPlan(node: ASTNode): BitmapPlan | null {
  const users = userComparisonPlan(node);
  if (users) return users;
  const op = node.op as PlanComparison;
  const numeric = sides(node, profilePath, literal);
  if (numeric) {
    if (typeof numeric.value !== 'number') return null; // string and bool ordering stay per user
    return { op: 'profileCmp', field: pathKey(numeric.field), cmp: numeric.mirrored ? MIRRORED[op] : op, value: numeric.value };
  }
  const time = sides(node, timestampOfProfile, timestampLiteral);
  if (!time) return null;
  if (Number.isNaN(time.value)) return { op: 'none' };
  return { op: 'profileTime', field: pathKey(time.field), cmp: time.mirrored ? MIRRORED[op] : op, at: time.value };
}

function equalityPlan(node: ASTNode): BitmapPlan | null {
  const user = userEqualityPlan(node);
  if (user) return user;
  const scalar = sides(node, profilePath, literal);
  if (scalar) return { op: 'profileEq', field: pathKey(scalar.field), value: scalar.value };
  const time = sides(node, timestampOfProfile, timestampLiteral);
  if (!time) return null;
  return Number.isNaN(time.value) ? { op: 'none' } : { op: 'profileTime', field: pathKey(time.field), cmp: '==', at: time.value };
}

/** The bitmap plan of `node`, or null when any part of it needs per-user evaluation. */
export function planOf(node: ASTNode): BitmapPlan | null {
  switch (node.op) {
    case 'value':
      return node.args === true ? { op: 'all' } : node.args === false ? { op: 'none' } : null;
    case 'call': {
      if (node.args[0] === 'has' && node.args[1].length === 1) {
        const path = profilePath(node.args[1][0]);
        return path && { op: 'profileHas', field: pathKey(path) };
      }
      const name = node.args[0] === 'inCrowd' && node.args[1].length === 1 ? stringLiteral(node.args[1][0]) : null;
      return name === null ? null : { op: 'crowd', name };
    }
    case '!_': {
      const arg = planOf(node.args);
      return arg && { op: 'not', arg };
    }
    case '&&':
    case '||': {
      const op = node.op === '&&' ? 'and' : 'or';
      const args: BitmapPlan[] = [];
      for (const child of node.args) {
        const plan = planOf(child);
        if (plan === null) return null;
        // a && (b && c) is one AND of three bitmaps
        if (plan.op === op) args.push(...plan.args);
        else args.push(plan);
      }
      return { op, args };
    }
    case '==':
      return equalityPlan(node);
    case '!=': {
      // Every user has an ID, so `user != n` is the complement of `user == n`.
      const user = userEqualityPlan(node);
      if (user) return { op: 'not', arg: user };
      // CEL: a present value of any other type or value is unequal; a missing one makes the comparison false.
      const equality = sides(node, profilePath, literal);
      if (!equality) return null;
      const field = pathKey(equality.field);
      return {
        op: 'and',
        args: [
          { op: 'profileHas', field },
          { op: 'not', arg: { op: 'profileEq', field, value: equality.value } },
        ],
      };
    }
    case '<':
    case '<=':
    case '>':
    case '>=':
      return comparisonPlan(node);
    case 'in': {
      if (node.args[1].op !== 'list') return null;
      if (isUser(node.args[0])) {
        const ids = (node.args[1].args as ASTNode[]).map(intLiteral);
        if (ids.some((id) => id === null)) return null;
        return { op: 'or', args: (ids as bigint[]).map((id) => userRange(id, id)) };
      }
      const path = profilePath(node.args[0]);
      const values = (node.args[1].args as ASTNode[]).map(literal);
      if (path === null || values.some((value) => value === null)) return null;
      return { op: 'profileIn', field: pathKey(path), values: values as PlanScalar[] };
    }
    default:
      return null;
  }
}

/**
 * The plan of the conjuncts of `node` that have one (`a && f(b) && c` → a AND c), or null when none has. Every user
 * the whole condition matches is in it (CEL: false && anything is false), so a per-user pass need only look at its
 * users; for a condition with a plan it is that plan.
 */
export function narrowingPlanOf(node: ASTNode): BitmapPlan | null {
  if (node.op !== '&&') return planOf(node);
  const args: BitmapPlan[] = [];
  for (const child of node.args) {
    const plan = narrowingPlanOf(child);
    if (plan?.op === 'and') args.push(...plan.args);
    else if (plan) args.push(plan);
  }
  return args.length === 0 ? null : { op: 'and', args };
}
