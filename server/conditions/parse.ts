import { analyzeCondition } from './analyze';
import { regexProblems } from './regex';

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
