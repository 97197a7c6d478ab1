import type { ASTNode } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';
import { MAX_REGEX_INSTRUCTIONS, regexProgramBound } from './regex-size';

// CEL's `matches` has RE2 semantics (linear time, no backreferences or lookaround). cel-js implements the method
// form with the JavaScript RegExp engine, which backtracks: `"a"*27 + "b"` against `(a+)+$` took 9 s. cel-js refuses
// a second overload of `string.matches(string)` (signatures may not overlap), so conditions are evaluated with every
// `x.matches(p)` rewritten to the CEL function form `matches(x, p)`, which cel-js lacks and we register with re2js.
// Measured with re2js 2.10 on this machine: that pattern and input in 0.05 ms; a 64 KiB input in 13-80 ms.

/** Compiled patterns by text; conditions use few distinct patterns, so a small cache makes each compile happen once. */
const compiled = new Map<string, RE2JS>();
const MAX_CACHED_PATTERNS = 1_000;

function re2(pattern: string): RE2JS {
  let regex = compiled.get(pattern);
  if (!regex) {
    // Checked before compiling: a pattern of 400 counted repetitions took 5 s and 600 MB to compile.
    const tooLarge = patternSizeProblem(pattern);
    if (tooLarge) throw new Error(`pattern ${tooLarge}`);
    regex = RE2JS.compile(pattern);
    if (compiled.size >= MAX_CACHED_PATTERNS) compiled.delete(compiled.keys().next().value!);
    compiled.set(pattern, regex);
  }
  return regex;
}

/** CEL `matches`: true when the RE2 pattern matches any part of `text` (anchor with ^ and $ for a whole match). */
export function re2Matches(text: string, pattern: string): boolean {
  return re2(pattern).matcher(text).find();
}

/** Null when `pattern` compiles to at most MAX_REGEX_INSTRUCTIONS, else how large it would be in words. */
function patternSizeProblem(pattern: string): string | null {
  const size = regexProgramBound(pattern);
  if (size <= MAX_REGEX_INSTRUCTIONS) return null;
  return (
    `is too large: it expands to about ${size.toLocaleString('en-US')} RE2 instructions (a counted repetition such as {1000} repeats what it ` +
    `follows that many times); the limit is ${MAX_REGEX_INSTRUCTIONS.toLocaleString('en-US')}`
  );
}

/** Null when `pattern` is valid RE2, else why not in words ("missing closing )"). */
export function re2PatternProblem(pattern: string): string | null {
  try {
    re2(pattern);
    return null;
  } catch (error) {
    return (error as Error).message.replace(/^error parsing regexp: /, '');
  }
}

function isMatchesMethod(node: ASTNode): node is Extract<ASTNode, { op: 'rcall' }> {
  return node.op === 'rcall' && node.args[0] === 'matches' && node.args[2].length === 1;
}

function isMatchesCall(node: ASTNode): node is Extract<ASTNode, { op: 'call' }> {
  return node.op === 'call' && node.args[0] === 'matches' && node.args[1].length === 2;
}

/** Every literal `matches` pattern of the condition that is not valid RE2, as problems in words. */
export function regexProblems(root: ASTNode): string[] {
  const problems: string[] = [];
  walk(root, (node) => {
    const pattern = isMatchesMethod(node) ? node.args[2][0] : isMatchesCall(node) ? node.args[1][1] : null;
    if (pattern?.op !== 'value' || typeof pattern.args !== 'string') return;
    const tooLarge = patternSizeProblem(pattern.args);
    const problem = tooLarge ? null : re2PatternProblem(pattern.args);
    const quoted = JSON.stringify(pattern.args.length > 80 ? `${pattern.args.slice(0, 80)}…` : pattern.args);
    if (tooLarge) problems.push(`matches pattern ${quoted} ${tooLarge}`);
    else if (problem) problems.push(`matches pattern ${quoted} is not a valid RE2 regular expression: ${problem}`);
  });
  return problems;
}

/** The same expression with `x.matches(p)` written as `matches(x, p)`, so evaluation runs the RE2 function. */
export function withRe2Matches(node: ASTNode): ASTNode {
  return rewrite(node) as ASTNode;
}

type Plain = { op: string; args: unknown };

function rewrite(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewrite);
  if (!isNode(value)) return value;
  const node = value as ASTNode;
  if (isMatchesMethod(node)) return { op: 'call', args: ['matches', [rewrite(node.args[1]), rewrite(node.args[2][0])]] };
  if (node.op === 'value' || node.op === 'id') return { op: node.op, args: node.args };
  return { op: node.op, args: rewrite(node.args) };
}

function isNode(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && 'op' in value && 'args' in value;
}

function walk(node: ASTNode, visit: (node: ASTNode) => void): void {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) stack.push(...value);
    else if (isNode(value)) {
      visit(value as ASTNode);
      if (value.op !== 'value' && value.op !== 'id') stack.push(value.args);
    }
  }
}
