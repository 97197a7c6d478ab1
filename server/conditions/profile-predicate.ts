import type { ASTNode } from '@marcbachmann/cel-js';
import type { PlanComparison } from './plan';
import { profilePath } from './plan';

// `profile.a.b <op> number` answered in JS: the per-user side of a numeric range leaf. cel-js would also answer it,
// but its leaves are re-parsed from serialized text, which rounds doubles to 9 decimals (0.3333333333333333 became
// 0.333333333), and a JS comparison is several times cheaper. Semantics are CEL's for JSON profiles: a number at
// the path compares numerically, anything else (missing, a string, a list, an intermediate that is not a map) is false.

const MIRRORED: Record<PlanComparison, PlanComparison> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

function numberLiteral(node: ASTNode): number | null {
  const negated = node.op === '-_';
  const inner = negated ? node.args : node;
  if (inner.op !== 'value') return null;
  const value = inner.args;
  // Past 2^53 an int literal is not a double: leave it to cel-js, which compares it exactly.
  const number = typeof value === 'number' ? value : typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : null;
  return number === null ? null : negated ? -number : number;
}

function valueAt(profile: Record<string, unknown> | undefined, path: string[]): unknown {
  let value: unknown = profile;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** The JS test of `profile.path <op> n` (either order), or null when `node` is not that shape. */
export function profileComparison(node: ASTNode): ((profile: Record<string, unknown> | undefined) => boolean) | null {
  if (!(node.op in MIRRORED)) return null;
  const [left, right] = node.args as [ASTNode, ASTNode];
  let path = profilePath(left);
  let value = numberLiteral(right);
  let op = node.op as PlanComparison;
  if (path === null || value === null) {
    path = profilePath(right);
    value = numberLiteral(left);
    op = MIRRORED[op];
  }
  if (path === null || value === null) return null;
  const [p, c] = [path, value];
  switch (op) {
    case '<':
      return (profile) => {
        const actual = valueAt(profile, p);
        return typeof actual === 'number' && actual < c;
      };
    case '<=':
      return (profile) => {
        const actual = valueAt(profile, p);
        return typeof actual === 'number' && actual <= c;
      };
    case '>':
      return (profile) => {
        const actual = valueAt(profile, p);
        return typeof actual === 'number' && actual > c;
      };
    case '>=':
      return (profile) => {
        const actual = valueAt(profile, p);
        return typeof actual === 'number' && actual >= c;
      };
  }
}
