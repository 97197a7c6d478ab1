// The scanners of text and JSON crowd uploads: bytes in, a roaring bitmap out, as the chunks arrive. IDs are scanned
// byte by byte into a Uint32Array and handed to roaring in batches (`addMany`): one N-API call per ID would cost more
// than the whole scan (see ENVIRONMENT.md). A bad ID is an AppError naming its line (text) or index (JSON).
import { AppError } from '../errors';
import { MAX_USER_ID, radixSortUint32, RoaringBitmap32 } from './bitmap';

/**
 * Collects IDs into a fixed buffer and adds them to the bitmap a batch at a time, sorted first: for sparse
 * crowds (array containers) sorted batches were measured 3× faster than unsorted ones (10M IDs: 2.5 s vs 7.9 s),
 * and a radix sort takes a third of TypedArray#sort's time (10M shuffled IDs: 0.26 s vs 0.78 s with addMany).
 * Batches of 4M IDs (16 MB, and as much scratch): every batch merges into most containers of the bitmap, so fewer
 * batches merge less (10M IDs: 690 → 650 ms CPU against batches of 1M).
 */
class IdSink {
  private readonly buffer = new Uint32Array(1 << 22);
  private readonly scratch = new Uint32Array(1 << 22);
  private length = 0;
  /** IDs added so far, duplicates included: a JSON upload's next element index. */
  added = 0;
  readonly bitmap = new RoaringBitmap32();

  add(id: number): void {
    this.added++;
    this.buffer[this.length++] = id;
    if (this.length === this.buffer.length) this.flush();
  }

  flush(): RoaringBitmap32 {
    if (this.length > 0) this.bitmap.addMany(radixSortUint32(this.buffer.subarray(0, this.length), this.scratch));
    this.length = 0;
    return this.bitmap;
  }
}

const KIND_ID = 0;
const KIND_TOO_LARGE = 1;
const KIND_NEGATIVE = 2;
const KIND_NOT_INTEGER = 3;
const MAX_SHOWN = 40;
const LF = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const COMMA = 44;
const MINUS = 45;
const QUOTE = 34;
const CLOSE_BRACKET = 93;
const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf];

const isDigit = (byte: number) => byte >= 48 && byte <= 57;

/** A byte → 1 table of the bytes that end an ID. */
function byteSet(bytes: number[]): Uint8Array {
  const set = new Uint8Array(256);
  for (const byte of bytes) set[byte] = 1;
  return set;
}

/**
 * The token being read: its kind, value, and its bytes from earlier chunks (kept only for the error message,
 * capped). A token never spans a line, so `line` is the token's line.
 */
abstract class IdScanner {
  protected readonly sink = new IdSink();
  /** The bytes that end an ID in this format. */
  protected abstract readonly separators: Uint8Array;
  protected line = 1;
  protected inToken = false;
  protected kind = KIND_ID;
  protected value = 0;
  protected digits = 0;
  protected carry: number[] = [];
  /** Bytes of a leading UTF-8 byte order mark matched so far; -1 once past the start of the upload. */
  private bomMatched = 0;

  feed(chunk: Uint8Array): void {
    let start = 0;
    while (this.bomMatched >= 0 && start < chunk.byteLength) {
      if (chunk[start] !== BYTE_ORDER_MARK[this.bomMatched]) {
        this.bomMatched = -1;
        break;
      }
      start++;
      if (++this.bomMatched === BYTE_ORDER_MARK.length) this.bomMatched = -1;
    }
    this.scan(chunk, start);
  }

  protected abstract scan(chunk: Uint8Array, start: number): void;

  abstract end(): RoaringBitmap32;

  /**
   * The fast path for the usual case, a whole ID inside this chunk at `i` (a digit) followed by a separator: adds
   * it and returns the separator's index. Anything unusual (a long or bad token, a chunk border) returns -1 for
   * the general, byte-at-a-time path.
   */
  protected wholeId(chunk: Uint8Array, i: number): number {
    const n = chunk.byteLength;
    let value = chunk[i] - 48;
    let j = i + 1;
    let next = chunk[j];
    while (j < n && isDigit(next) && j - i < 10) {
      value = value * 10 + (next - 48);
      next = chunk[++j];
    }
    if (j < n && value <= MAX_USER_ID && this.separators[next] === 1) {
      this.sink.add(value);
      return j;
    }
    return -1;
  }

  protected startToken(first: number): void {
    this.inToken = true;
    this.value = 0;
    this.digits = 0;
    this.carry.length = 0;
    this.kind = isDigit(first) ? KIND_ID : first === MINUS ? KIND_NEGATIVE : KIND_NOT_INTEGER;
  }

  protected addDigit(byte: number): void {
    if (this.kind === KIND_ID) {
      this.value = this.value * 10 + (byte - 48);
      if (this.value > MAX_USER_ID) this.kind = KIND_TOO_LARGE;
    }
    this.digits++;
  }

  /** Keeps the start of a token that continues in the next chunk, for its error message. */
  protected carryOver(chunk: Uint8Array, tokenStart: number): void {
    for (let i = tokenStart; i < chunk.byteLength && this.carry.length <= MAX_SHOWN; i++) this.carry.push(chunk[i]);
  }

  protected finishToken(chunk: Uint8Array, tokenStart: number, tokenEnd: number): void {
    this.inToken = false;
    if (this.kind === KIND_ID && this.digits > 0) {
      this.sink.add(this.value);
      return;
    }
    const kind = this.kind === KIND_NEGATIVE && this.digits === 0 ? KIND_NOT_INTEGER : this.kind;
    throw this.badId(this.tokenText(chunk, tokenStart, tokenEnd), kind);
  }

  /** A bad ID, named by where it is: its line in text, its array index in JSON. */
  protected abstract badId(text: string, kind: number): AppError;

  protected tokenText(chunk: Uint8Array, tokenStart: number, tokenEnd: number): string {
    const own = chunk.subarray(tokenStart, Math.min(tokenEnd, tokenStart + MAX_SHOWN + 1));
    return Buffer.concat([Uint8Array.from(this.carry), own]).toString('utf8');
  }
}

const shownId = (text: string) => (text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text);
const whyBad = (kind: number) => (kind === KIND_NEGATIVE ? 'is negative' : kind === KIND_TOO_LARGE ? `is above ${MAX_USER_ID}` : 'is not an integer');

function isHeaderStart(byte: number): boolean {
  return (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte === 95 || byte === QUOTE;
}

/**
 * text/plain and text/csv: IDs separated by newlines (LF or CRLF), commas, spaces or tabs. A first line that
 * starts with a letter, "_" or a quote is a header (e.g. `user_id`) and is skipped.
 */
export class TextIdScanner extends IdScanner {
  protected readonly separators = byteSet([LF, COMMA, SPACE, CR, TAB]);
  private headerPossible = true;
  private skippingLine = false;

  protected scan(chunk: Uint8Array, start: number): void {
    const n = chunk.byteLength;
    let i = start;
    let tokenStart = this.inToken ? 0 : -1;
    if (this.skippingLine) {
      i = chunk.indexOf(LF, i);
      if (i < 0) return;
      this.skippingLine = false;
    }
    for (; i < n; i++) {
      const b = chunk[i];
      if (isDigit(b)) {
        if (!this.inToken) {
          this.headerPossible = false;
          const end = this.wholeId(chunk, i);
          if (end >= 0) {
            i = end - 1;
            continue;
          }
          this.startToken(b);
          tokenStart = i;
        }
        this.addDigit(b);
      } else if (this.separators[b] === 1) {
        if (this.inToken) this.finishToken(chunk, tokenStart, i);
        if (b === LF) {
          this.line++;
          this.headerPossible = false;
        }
      } else if (this.inToken) {
        this.kind = KIND_NOT_INTEGER;
      } else if (this.headerPossible && isHeaderStart(b)) {
        this.headerPossible = false;
        const lineEnd = chunk.indexOf(LF, i);
        if (lineEnd < 0) {
          this.skippingLine = true;
          return;
        }
        i = lineEnd - 1;
      } else {
        this.headerPossible = false;
        this.startToken(b);
        tokenStart = i;
      }
    }
    if (this.inToken) this.carryOver(chunk, tokenStart);
  }

  end(): RoaringBitmap32 {
    if (this.inToken) this.finishToken(new Uint8Array(0), 0, 0);
    return this.sink.flush();
  }

  protected badId(text: string, kind: number): AppError {
    const value = shownId(text);
    return new AppError('invalid_id', `Line ${this.line}: "${value}" ${whyBad(kind)}; user IDs are integers from 0 to ${MAX_USER_ID}`, {
      path: `line ${this.line}`,
      line: this.line,
      value,
    });
  }
}

const BEFORE_ARRAY = 0;
const AFTER_OPEN = 1;
const AFTER_COMMA = 2;
const AFTER_VALUE = 3;
const IN_STRING = 4;
const AFTER_ARRAY = 5;

/** application/json: one array of integers, e.g. `[1, 2, 3]`; anything else in it names its line. */
export class JsonIdScanner extends IdScanner {
  protected readonly separators = byteSet([COMMA, CLOSE_BRACKET, SPACE, LF, CR, TAB]);
  private state = BEFORE_ARRAY;
  private escaped = false;

  protected scan(chunk: Uint8Array, start: number): void {
    const n = chunk.byteLength;
    let tokenStart = this.inToken || this.state === IN_STRING ? 0 : -1;
    for (let i = start; i < n; i++) {
      const b = chunk[i];
      if (this.state === IN_STRING) {
        if (this.escaped) this.escaped = false;
        else if (b === 92) this.escaped = true;
        else if (b === QUOTE) throw this.badId(this.tokenText(chunk, tokenStart, i + 1), KIND_NOT_INTEGER);
        else if (b === LF) throw this.structural('a string that is not closed');
      } else if (isDigit(b)) {
        if (!this.inToken) {
          if (this.state !== AFTER_OPEN && this.state !== AFTER_COMMA) throw this.unexpected(b);
          const end = this.wholeId(chunk, i);
          if (end >= 0) {
            this.state = AFTER_VALUE;
            i = end - 1;
            continue;
          }
          this.startToken(b);
          tokenStart = i;
        }
        this.addDigit(b);
      } else if (b === SPACE || b === LF || b === CR || b === TAB) {
        this.endValue(chunk, tokenStart, i);
        if (b === LF) this.line++;
      } else if (b === COMMA) {
        this.endValue(chunk, tokenStart, i);
        if (this.state !== AFTER_VALUE) throw this.unexpected(b);
        this.state = AFTER_COMMA;
      } else if (b === CLOSE_BRACKET) {
        this.endValue(chunk, tokenStart, i);
        if (this.state !== AFTER_VALUE && this.state !== AFTER_OPEN) throw this.unexpected(b);
        this.state = AFTER_ARRAY;
      } else if (b === 91 /* [ */ && this.state === BEFORE_ARRAY) {
        this.state = AFTER_OPEN;
      } else if (this.inToken) {
        if (b === 91 || b === 123 || b === 125 || b === 58 || b === QUOTE) throw this.unexpected(b);
        this.kind = KIND_NOT_INTEGER;
      } else if (this.state === AFTER_OPEN || this.state === AFTER_COMMA) {
        if (b === 91 || b === 123 || b === 125 || b === 58) throw this.unexpected(b);
        tokenStart = i;
        if (b === QUOTE) {
          this.state = IN_STRING;
          this.carry.length = 0;
        } else {
          this.startToken(b);
        }
      } else {
        throw this.unexpected(b);
      }
    }
    if (this.inToken || this.state === IN_STRING) this.carryOver(chunk, tokenStart);
  }

  /** Shown as JSON text (a string keeps its quotes), named by its index in the array. */
  protected badId(text: string, kind: number): AppError {
    const value = shownId(text);
    const index = this.sink.added;
    return new AppError('invalid_id', `Element [${index}] (line ${this.line}): ${value} ${whyBad(kind)}; user IDs are integers from 0 to ${MAX_USER_ID}`, {
      path: `[${index}]`,
      index,
      line: this.line,
      value,
    });
  }

  private endValue(chunk: Uint8Array, tokenStart: number, i: number): void {
    if (!this.inToken) return;
    this.finishToken(chunk, tokenStart, i);
    this.state = AFTER_VALUE;
  }

  private unexpected(byte: number): AppError {
    const expected = ['"["', 'a user ID or "]"', 'a user ID', '"," or "]"', '', 'nothing after the closing "]"'][this.state];
    return this.structural(`expected ${expected} but found "${String.fromCharCode(byte)}"`);
  }

  private structural(problem: string): AppError {
    return new AppError('invalid_json', `Line ${this.line}: ${problem}; a JSON crowd is an array of user IDs like [1, 2, 3]`, {
      path: `line ${this.line}`,
      line: this.line,
    });
  }

  end(): RoaringBitmap32 {
    if (this.inToken) this.endValue(new Uint8Array(0), 0, 0);
    if (this.state === IN_STRING) throw this.structural('a string that is not closed');
    if (this.state === BEFORE_ARRAY) throw new AppError('invalid_json', 'The body is empty; a JSON crowd is an array of user IDs like [1, 2, 3]');
    if (this.state !== AFTER_ARRAY) throw this.structural('the array is not closed with "]"');
    return this.sink.flush();
  }
}
