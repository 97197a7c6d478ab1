// Reading a profile import: a streamed body as numbered lines, and each line as `{user, attributes}` — NDJSON
// (`{"user": 7, "attributes": {...}}` a line) or CSV with a header row (`user,plan,age,...`). A bad line is an
// AppError naming its line number and what is wrong with it.
import { AppError } from '../errors';
import { MAX_USER_ID } from '../crowd/bitmap';
import type { Attributes } from './index-tenant';

export type ImportItem = { user: number; attributes: Attributes };
export type ColumnType = 'string' | 'number' | 'boolean';

/** Lines longer than this are refused (a profile is at most 64 KiB of JSON; CSV lines are shorter). */
const MAX_LINE_BYTES = 256 * 1024;

export function badLine(line: number, problem: string): AppError {
  return new AppError('validation_failed', `line ${line}: ${problem}`, { path: `line ${line}`, line, problem });
}

/** One piece of the body split into lines: `lines[i]` is line number `numbers[i]` (1-based; blank lines left out). */
export type LineBatch = { lines: string[]; numbers: number[] };

/**
 * The body's lines, a batch per piece read (not a promise per line: 10M lines would pay 10M async-generator steps);
 * blank lines are skipped, a trailing \r is dropped.
 */
export async function* lineBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<LineBatch> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let rest = '';
  let number = 0;
  const reader = body.getReader();
  let finished = false;
  try {
    yield* batchesOf();
    finished = true;
  } finally {
    // A consumer that stops early (a bad line) lets the rest of the body go.
    if (!finished) await reader.cancel().catch(() => undefined);
  }

  async function* batchesOf(): AsyncGenerator<LineBatch> {
    for (;;) {
      const { value, done } = await reader.read();
      let text: string;
      try {
        text = rest + (done ? decoder.decode() : decoder.decode(value, { stream: true }));
      } catch {
        throw badLine(number + 1, 'the body is not valid UTF-8');
      }
      const batch: LineBatch = { lines: [], numbers: [] };
      let start = 0;
      for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
        number++;
        const line = text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
        if (line.trim() !== '') {
          batch.lines.push(line);
          batch.numbers.push(number);
        }
        start = end + 1;
      }
      rest = text.slice(start);
      if (rest.length > MAX_LINE_BYTES) throw badLine(number + 1, `the line is longer than ${MAX_LINE_BYTES} bytes`);
      if (done && rest.trim() !== '') {
        batch.lines.push(rest.endsWith('\r') ? rest.slice(0, -1) : rest);
        batch.numbers.push(number + 1);
      }
      if (batch.lines.length > 0) yield batch;
      if (done) break;
    }
  }
}

function userId(value: unknown, line: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_USER_ID) {
    throw badLine(line, `"user" must be an integer from 0 to ${MAX_USER_ID}, got ${JSON.stringify(value)?.slice(0, 40)}`);
  }
  return value;
}

const isObject = (value: unknown): value is Attributes => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{"user": 7, "attributes": {...}}`, nothing else. */
export function parseNdjsonLine(text: string, line: number): ImportItem {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw badLine(line, `not JSON (${(error as Error).message})`);
  }
  if (!isObject(parsed)) throw badLine(line, 'expected an object {"user": …, "attributes": {…}}');
  for (const key in parsed) if (key !== 'user' && key !== 'attributes') throw badLine(line, `unknown key "${key.slice(0, 40)}" (only "user" and "attributes")`);
  const user = userId(parsed.user, line);
  if (!isObject(parsed.attributes)) throw badLine(line, '"attributes" must be an object');
  return { user, attributes: parsed.attributes };
}

/** One CSV record (RFC 4180 quoting: "a, b" and "say ""hi"""; a quoted field may not span lines). */
export function splitCsv(text: string, line: number): string[] {
  const cells: string[] = [];
  let at = 0;
  for (;;) {
    if (text[at] === '"') {
      let cell = '';
      at++;
      for (;;) {
        const quote = text.indexOf('"', at);
        if (quote === -1) throw badLine(line, 'a quoted field is not closed on this line');
        cell += text.slice(at, quote);
        if (text[quote + 1] === '"') {
          cell += '"';
          at = quote + 2;
        } else {
          at = quote + 1;
          break;
        }
      }
      cells.push(cell);
      if (at < text.length && text[at] !== ',') throw badLine(line, `unexpected "${text[at]}" after a quoted field`);
    } else {
      const comma = text.indexOf(',', at);
      cells.push(text.slice(at, comma === -1 ? text.length : comma));
      at = comma === -1 ? text.length : comma;
    }
    if (at >= text.length) return cells;
    at++; // the comma
    if (at === text.length) {
      cells.push('');
      return cells;
    }
  }
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * Reads CSV records against the header: the `user` column, then one attribute per column (`address.country`
 * nests). A cell's type is declared (`types`) or inferred: a JSON number, true/false, else a string. An empty
 * cell leaves the attribute out.
 */
export class CsvReader {
  private readonly columns: Array<{ path: string[]; type: ColumnType | null }>;
  private readonly userColumn: number;

  constructor(header: string[], types: Record<string, ColumnType>, line: number) {
    this.userColumn = header.indexOf('user');
    if (this.userColumn === -1) throw badLine(line, 'the header has no "user" column');
    const seen = new Set<string>();
    this.columns = header.map((name, i) => {
      if (i !== this.userColumn && (name === '' || seen.has(name)))
        throw badLine(line, name === '' ? `column ${i + 1} has no name` : `column "${name}" appears twice`);
      seen.add(name);
      return { path: name.split('.'), type: types[name] ?? null };
    });
    for (const name of Object.keys(types)) if (!seen.has(name)) throw badLine(line, `a type is declared for "${name}", which is not a column`);
  }

  read(text: string, line: number): ImportItem {
    const cells = splitCsv(text, line);
    if (cells.length !== this.columns.length) throw badLine(line, `${cells.length} fields, the header has ${this.columns.length}`);
    const raw = cells[this.userColumn];
    const user = userId(NUMBER.test(raw) ? Number(raw) : raw, line);
    const attributes: Attributes = {};
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i];
      if (i === this.userColumn || cell === '') continue;
      const { path, type } = this.columns[i];
      let target = attributes;
      for (const key of path.slice(0, -1)) {
        target[key] ??= {};
        if (!isObject(target[key])) throw badLine(line, `column "${path.join('.')}" nests into "${key}", which another column set to a value`);
        target = target[key];
      }
      target[path[path.length - 1]] = typed(cell, type, path.join('.'), line);
    }
    return { user, attributes };
  }
}

function typed(cell: string, type: ColumnType | null, column: string, line: number): string | number | boolean {
  if (type === 'string') return cell;
  if (type === 'number' || (type === null && NUMBER.test(cell))) {
    const value = Number(cell);
    if (!NUMBER.test(cell) || !Number.isFinite(value)) throw badLine(line, `column "${column}" must be a number, got "${cell.slice(0, 40)}"`);
    return value;
  }
  if (type === 'boolean' || (type === null && (cell === 'true' || cell === 'false'))) {
    if (cell !== 'true' && cell !== 'false') throw badLine(line, `column "${column}" must be true or false, got "${cell.slice(0, 40)}"`);
    return cell === 'true';
  }
  return cell;
}

/** `age:number,zip:string` → types by column. */
export function parseColumnTypes(text: string | null): Record<string, ColumnType> {
  const types: Record<string, ColumnType> = {};
  if (!text) return types;
  for (const entry of text.split(',')) {
    const at = entry.lastIndexOf(':');
    const [column, type] = [entry.slice(0, at), entry.slice(at + 1)];
    if (at <= 0 || (type !== 'string' && type !== 'number' && type !== 'boolean')) {
      throw new AppError('bad_request', `types: "${entry.slice(0, 60)}" is not column:type with type string, number or boolean`);
    }
    types[column] = type;
  }
  return types;
}
