import { request as httpRequest } from 'node:http';
import { baseUrl } from '../helpers/api';

// The request and answer checks and the body mutations of robustness.test.ts.

export type Raw = { status: number; body: any; text: string };
export type Sent = { method: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array };

/** One HTTP call with the path sent exactly as given (fetch would resolve `..` and re-encode). */
export function raw(sent: Sent, timeoutMs = 15_000): Promise<Raw> {
  const url = new URL(baseUrl());
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: sent.method, path: `/api/v1${sent.path}`, headers: sent.headers ?? {}, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: reported by the shape check
          }
          resolve({ status: res.statusCode ?? 0, body, text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (sent.body !== undefined) req.write(sent.body);
    req.end();
  });
}

export type Expectation = { status?: number[]; mentions?: RegExp | string; allowSuccess?: boolean; allowRedirect?: boolean };

/** Checks one answer; returns a description of what is wrong with it, or null. */
function problem(sent: Sent, answer: Raw, expect: Expectation): string | null {
  const label = `${sent.method} ${sent.path.length > 140 ? `${sent.path.slice(0, 140)}…` : sent.path}`;
  if (answer.status >= 200 && answer.status < 300 && expect.allowSuccess) return null;
  if (answer.status >= 300 && answer.status < 400 && expect.allowRedirect) return null;
  if (answer.status >= 500 || answer.status < 400) return `${label} → ${answer.status} ${answer.text.slice(0, 300)}`;
  if (expect.status && !expect.status.includes(answer.status))
    return `${label} → ${answer.status}, expected ${expect.status.join('|')}: ${answer.text.slice(0, 300)}`;
  const error = answer.body?.error;
  if (typeof error?.code !== 'string' || typeof error?.message !== 'string' || error.message.length === 0) {
    return `${label} → ${answer.status} without {error:{code,message}}: ${answer.text.slice(0, 300)}`;
  }
  const mentions = expect.mentions;
  if (mentions && !(typeof mentions === 'string' ? error.message.toLowerCase().includes(mentions.toLowerCase()) : mentions.test(error.message))) {
    return `${label} → ${answer.status} message does not name the problem (${mentions}): ${error.message.slice(0, 300)}`;
  }
  return null;
}

/** Sends one request and records what is wrong with its answer; returns the answer's status (0 when none came). */
export async function check(failures: string[], sent: Sent, expect: Expectation): Promise<number> {
  let answer: Raw;
  try {
    answer = await raw(sent);
  } catch (error) {
    failures.push(`${sent.method} ${sent.path.slice(0, 140)} → ${(error as Error).message}`);
    return 0;
  }
  const found = problem(sent, answer, expect);
  if (found) failures.push(found);
  return answer.status;
}

/** Values of another JSON type than `value`'s. */
export function wrongValues(value: unknown): unknown[] {
  if (typeof value === 'string') return [12, { nested: true }, ['a'], true];
  if (typeof value === 'number') return ['twelve', { nested: true }, [1], false];
  if (typeof value === 'boolean') return ['yes', 1];
  if (Array.isArray(value)) return ['text', { nested: true }, 1];
  return ['text', [1], 1];
}

/** The body with one number replaced by a hostile one, for every number in it: [path to the number, JSON]. */
export function numberMutations(body: unknown): Array<[string[], string]> {
  const out: Array<[string[], string]> = [];
  const visit = (value: unknown, path: string[]) => {
    if (typeof value === 'number') {
      for (const hostile of ['-1', '1.5', '1e308', '18446744073709551616', '-0.0000001']) {
        const marker = '"__number__"';
        const replaced = JSON.stringify(setAt(body, path, '__number__')).replace(marker, hostile);
        out.push([path, replaced]);
      }
    } else if (value && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) visit(child, [...path, key]);
    }
  };
  visit(body, []);
  return out;
}

/** The body with one string replaced by a hostile one, for every string in it: [path, JSON, the hostile string]. */
export function stringMutations(body: unknown): Array<[string[], string, string]> {
  const out: Array<[string[], string, string]> = [];
  const visit = (value: unknown, path: string[]) => {
    if (typeof value === 'string') {
      for (const hostile of ['a\u0000b', '\ud800', 'x'.repeat(20_000)]) out.push([path, JSON.stringify(setAt(body, path, hostile)), hostile]);
    } else if (value && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) visit(child, [...path, key]);
    }
  };
  visit(body, []);
  return out;
}

function setAt(value: unknown, path: string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) };
  copy[head] = setAt(copy[head], rest, replacement);
  return copy;
}
