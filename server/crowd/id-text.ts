// User IDs as decimal text, written as bytes into one fresh buffer per page (never a joined string: 10M IDs through
// Array.join take seconds and a second copy of the text). Pages are formatted in the export formatter thread
// (id-text-thread.ts), so a 10M-ID export (≈ 1 s of this loop) never holds the thread that answers requests.

const MAX_DIGITS = 10;
const OPEN_BRACKET = 91;
const COMMA = 44;
const NEWLINE = 10;

/**
 * One page of an export: for text, each ID followed by a newline; for JSON, IDs separated by commas, the first page
 * opening the array (`afterEarlierIds` false) and later pages starting with a comma.
 */
export function formatIdPage(ids: Uint32Array, asJson: boolean, afterEarlierIds: boolean): Uint8Array {
  const out = new Uint8Array(ids.length * (MAX_DIGITS + 1) + 1);
  let position = 0;
  if (asJson && !afterEarlierIds) out[position++] = OPEN_BRACKET;
  for (let k = 0; k < ids.length; k++) {
    if (asJson && (k > 0 || afterEarlierIds)) out[position++] = COMMA;
    let value = ids[k];
    const length = digitCount(value);
    let cursor = position + length;
    do {
      const next = Math.floor(value / 10);
      out[--cursor] = 48 + value - next * 10;
      value = next;
    } while (value > 0);
    position += length;
    if (!asJson) out[position++] = NEWLINE;
  }
  return out.subarray(0, position);
}

function digitCount(value: number): number {
  if (value < 100000) return value < 10 ? 1 : value < 100 ? 2 : value < 1000 ? 3 : value < 10000 ? 4 : 5;
  return value < 1000000 ? 6 : value < 10000000 ? 7 : value < 100000000 ? 8 : value < 1000000000 ? 9 : 10;
}
