import { analyzeCondition } from './analyze';

/**
 * Null when `text` is a valid condition, otherwise the problem in words (shown on the canvas and in save errors):
 * syntax errors, unknown variables or functions, type errors, a non-boolean result, inCrowd without a crowd name.
 * Browser-safe: it parses and type-checks with cel-js only.
 */
export function celSyntaxProblem(text: string): string | null {
  const analysis = analyzeCondition(text);
  return analysis.ok ? null : analysis.problem;
}
