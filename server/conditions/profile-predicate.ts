import type { ASTNode } from '@marcbachmann/cel-js';
import { conditionEnvironment } from '../../core/conditions/environment';
import { profilePath, type PlanComparison } from '../../core/conditions/plan';

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

/** Module-level, not app state: a memo of a pure function (a text → the attributes it reads), cleared past 10,000. */
const keysByText = new Map<string, readonly string[] | null>();

/**
 * The top-level profile attributes `text` reads, or null when it reads the profile as a whole (`size(profile)`,
 * `profile.x` with a computed key): a batch then reads only those attributes back from the index.
 */
export function profileKeysRead(text: string): readonly string[] | null {
  if (keysByText.has(text)) return keysByText.get(text)!;
  const keys = new Set<string>();
  let whole = false;
  const visit = (node: ASTNode, parent: ASTNode | null) => {
    if (node.op === 'id' && node.args === 'profile') {
      const key =
        parent && (parent.op === '.' || parent.op === '[]') && parent.args[0] === node
          ? parent.op === '.'
            ? parent.args[1]
            : parent.args[1].op === 'value'
              ? parent.args[1].args
              : null
          : null;
      if (typeof key === 'string') keys.add(key);
      else whole = true;
    }
    if (node.op === 'value' || node.op === 'id') return;
    const children: ASTNode[] = [];
    const collect = (value: unknown) => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value && typeof value === 'object' && 'op' in value && 'args' in value) children.push(value as ASTNode);
    };
    collect(node.args);
    for (const child of children) visit(child, node);
  };
  visit(conditionEnvironment.parse(text).ast, null);
  const result = whole ? null : [...keys].sort();
  if (keysByText.size > 10_000) keysByText.clear();
  keysByText.set(text, result);
  return result;
}

/** The attributes any of `texts` reads (null: the whole profile). */
export function profileKeysOfAll(texts: readonly string[]): string[] | null {
  const keys = new Set<string>();
  for (const text of texts) {
    const read = profileKeysRead(text);
    if (read === null) return null;
    for (const key of read) keys.add(key);
  }
  return [...keys];
}
