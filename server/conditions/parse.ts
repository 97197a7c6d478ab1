import { parse } from '@marcbachmann/cel-js';

/** Null when `text` is valid CEL, otherwise the parser's message (shown on the canvas and in save errors). */
export function celSyntaxProblem(text: string): string | null {
  try {
    parse(text);
    return null;
  } catch (error) {
    return (error as Error).message.split('\n')[0];
  }
}
