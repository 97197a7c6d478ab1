import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../server/errors';
import { RoaringBitmap32, deserializeBitmap, radixSortUint32, serializeBitmap } from '../../server/crowd/bitmap';
import { sparseIds } from '../../bench/lib/data';
import { seededRandom } from '../helpers/seeded-random';
import { parseCrowdUpload, uploadFormat } from '../../server/crowd/parse';
import { bitmapExportResponse } from '../../server/crowd/export';
import { IdTextFormatter } from '../../server/crowd/id-text-formatter';

/** The text formats' writer thread, as an app holds one. */
const idText = new IdTextFormatter();
afterAll(() => idText.close());

const LIMIT = 1024 * 1024;

/** The same bytes fed whole, one byte at a time, and in 3-byte chunks: chunk borders must never matter. */
function chunkings(input: string | Uint8Array): Array<[string, () => AsyncIterable<Uint8Array>]> {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const split = (size: number) =>
    async function* () {
      for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
    };
  return [
    ['whole', split(Math.max(bytes.length, 1))],
    ['byte by byte', split(1)],
    ['3-byte chunks', split(3)],
  ];
}

async function idsOf(input: string | Uint8Array, contentType: string): Promise<number[]> {
  const results = await Promise.all(chunkings(input).map(async ([, source]) => (await parseCrowdUpload(source(), contentType, LIMIT)).toArray()));
  for (const result of results) expect(result).toEqual(results[0]);
  return results[0];
}

async function errorOf(input: string | Uint8Array, contentType: string, limit = LIMIT): Promise<AppError> {
  const errors: AppError[] = [];
  for (const [how, source] of chunkings(input)) {
    const error = await parseCrowdUpload(source(), contentType, limit).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, `${how}: expected an error`).toBeInstanceOf(AppError);
    errors.push(error as AppError);
  }
  for (const error of errors) expect([error.code, error.message]).toEqual([errors[0].code, errors[0].message]);
  return errors[0];
}

describe('crowd upload parsing', () => {
  it('reads one ID per line, with LF or CRLF, with or without a final newline', async () => {
    expect(await idsOf('3\n1\n2\n', 'text/plain')).toEqual([1, 2, 3]);
    expect(await idsOf('3\r\n1\r\n2', 'text/csv')).toEqual([1, 2, 3]);
  });

  it('reads comma, space and tab separated IDs, blank lines and empty fields included', async () => {
    expect(await idsOf('1,2, 3\t4  5\n\n6,,7,\r\n', 'text/csv; charset=utf-8')).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('skips a header line and a byte order mark', async () => {
    expect(await idsOf('user_id\n10\n11\n', 'text/csv')).toEqual([10, 11]);
    expect(await idsOf('"id"\r\n10\r\n', 'text/csv')).toEqual([10]);
    expect(await idsOf('\uFEFFid\n12\n', 'text/csv')).toEqual([12]);
    expect(await idsOf('\uFEFF12\n13', 'text/plain')).toEqual([12, 13]);
  });

  it('keeps duplicates once and accepts 0 and 4294967295', async () => {
    expect(await idsOf('5\n5\n0\n4294967295\n5\n0000000007', 'text/plain')).toEqual([0, 5, 7, 4294967295]);
    expect(await idsOf('[4294967295, 0, 0]', 'application/json')).toEqual([0, 4294967295]);
    expect(await idsOf('00000000000000000001\n1234567890,4294967295', 'text/plain')).toEqual([1, 1234567890, 4294967295]);
  });

  it('reads a JSON array across lines, and an empty one', async () => {
    expect(await idsOf('\n[\n  1,\n  2 ,3\n]\n', 'application/json')).toEqual([1, 2, 3]);
    expect(await idsOf('[]', 'application/json')).toEqual([]);
    expect(await idsOf(' [ ] ', 'application/json; charset=utf-8')).toEqual([]);
  });

  it("refuses a 0-byte upload of every type, and reads each format's empty value as an empty crowd", async () => {
    for (const type of ['text/plain', 'text/csv', 'application/json', 'application/octet-stream']) {
      expect((await errorOf('', type)).code).toBe('empty_upload');
      await expect(parseCrowdUpload(null, type, LIMIT)).rejects.toMatchObject({ code: 'empty_upload' });
    }
    expect(await idsOf('\n', 'text/plain')).toEqual([]);
    expect(await idsOf('user_id\n', 'text/csv')).toEqual([]);
    expect(await idsOf('[]', 'application/json')).toEqual([]);
    expect(await idsOf(new RoaringBitmap32().serialize('portable'), 'application/octet-stream')).toEqual([]);
    expect((await errorOf(' ', 'application/json')).code).toBe('invalid_json');
  });

  it('names the line and the value of every kind of bad ID', async () => {
    const cases: Array<[string, string, number, string, RegExp]> = [
      ['1\n2\nabc\n', 'text/plain', 3, 'abc', /is not an integer/],
      ['1\n-7\n', 'text/plain', 2, '-7', /is negative/],
      ['1\r\n2\r\n4294967296\r\n', 'text/csv', 3, '4294967296', /is above 4294967295/],
      ['99999999999999999999999', 'text/plain', 1, '99999999999999999999999', /is above 4294967295/],
      ['1,2\n3,4.5', 'text/csv', 2, '4.5', /is not an integer/],
      ['1e3', 'text/plain', 1, '1e3', /is not an integer/],
      ['0x1F', 'text/plain', 1, '0x1F', /is not an integer/],
      ['+5', 'text/plain', 1, '+5', /is not an integer/],
      ['-', 'text/plain', 1, '-', /is not an integer/],
      ['id\n7\nseven', 'text/csv', 3, 'seven', /is not an integer/],
      ['-1\n', 'text/plain', 1, '-1', /is negative/],
    ];
    for (const [input, type, line, value, why] of cases) {
      const error = await errorOf(input, type);
      expect(error.code, input).toBe('invalid_id');
      expect(error.status).toBe(400);
      expect(error.message, input).toContain(`Line ${line}: "${value}"`);
      expect(error.message, input).toMatch(why);
      expect(error.details).toEqual({ path: `line ${line}`, line, value });
    }
  });

  it('names the array index, the line and the JSON text of every kind of bad ID in a JSON upload', async () => {
    const cases: Array<[string, number, number, string, RegExp]> = [
      ['[1,\n2,\n-3]', 2, 3, '-3', /is negative/],
      ['[1,\n"12"]', 1, 2, '"12"', /is not an integer/],
      ['[1,2,"3"]', 2, 1, '"3"', /is not an integer/],
      ['[1.0]', 0, 1, '1.0', /is not an integer/],
      ['[7, 7, true]', 2, 1, 'true', /is not an integer/],
      ['[null]', 0, 1, 'null', /is not an integer/],
      ['[4294967296]', 0, 1, '4294967296', /is above 4294967295/],
    ];
    for (const [input, index, line, value, why] of cases) {
      const error = await errorOf(input, 'application/json');
      expect(error.code, input).toBe('invalid_id');
      expect(error.message, input).toContain(`Element [${index}] (line ${line}): ${value} `);
      expect(error.message, input).toMatch(why);
      expect(error.details).toEqual({ path: `[${index}]`, index, line, value });
    }
  });

  it('shortens a very long bad value in the message', async () => {
    const error = await errorOf(`1\n${'x'.repeat(5000)}\n`, 'text/plain');
    expect(error.message).toContain(`Line 2: "${'x'.repeat(40)}…"`);
  });

  it('refuses JSON that is not one array of IDs, naming the line', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{"ids": [1]}', /Line 1: expected "\[" but found "\{"/],
      ['[1,\n[2]]', /Line 2: expected a user ID but found "\["/],
      ['[1 2]', /Line 1: expected "," or "\]" but found "2"/],
      ['[1,]', /expected a user ID but found "\]"/],
      ['[1,\n2', /Line 2: the array is not closed/],
      ['[1] [2]', /nothing after the closing "\]"/],
      ['["abc', /string that is not closed/],
    ];
    for (const [input, message] of cases) {
      const error = await errorOf(input, 'application/json');
      expect(error.code, input).toBe('invalid_json');
      expect(error.message, input).toMatch(message);
    }
  });

  it('stops at the byte cap with a 413', async () => {
    const error = await errorOf('1\n'.repeat(100), 'text/plain', 50);
    expect(error.code).toBe('payload_too_large');
    expect(error.status).toBe(413);
    expect(error.message).toContain('50 bytes');
    for (const [how, source] of chunkings('1\n'.repeat(25))) {
      expect((await parseCrowdUpload(source(), 'text/plain', 50)).toArray(), `exactly at the cap, ${how}`).toEqual([1]);
    }
  });

  it('cancels a ReadableStream body it stops reading', async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('1\nbad\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    await expect(parseCrowdUpload(stream, 'text/plain', LIMIT)).rejects.toMatchObject({ code: 'invalid_id' });
    expect(cancelled).toBe(true);
  });

  it('maps Content-Types to formats and refuses the others with 415', () => {
    expect(uploadFormat('text/plain')).toBe('text');
    expect(uploadFormat('TEXT/CSV; charset=utf-8')).toBe('text');
    expect(uploadFormat('application/json')).toBe('json');
    expect(uploadFormat('application/octet-stream')).toBe('roaring');
    for (const type of ['text/html', 'multipart/form-data; boundary=x', '', null]) {
      expect(() => uploadFormat(type)).toThrow(expect.objectContaining({ code: 'unsupported_media_type' }));
    }
  });
});

describe('portable roaring uploads', () => {
  const bitmap = RoaringBitmap32.from([0, 1, 2, 65536, 1_000_000, 4294967295]);
  bitmap.addRange(10_000, 20_000);
  const bytes = serializeBitmap(bitmap);

  it('reads a portable bitmap uploaded in any chunking', async () => {
    expect(await idsOf(bytes, 'application/octet-stream')).toEqual(bitmap.toArray());
  });

  it('refuses every truncation, junk and trailing bytes with invalid_bitmap', async () => {
    for (const cut of [1, 4, 8, 16, bytes.length - 1]) {
      const error = await errorOf(bytes.subarray(0, cut), 'application/octet-stream');
      expect(error.code, `cut at ${cut}`).toBe('invalid_bitmap');
      expect(error.status).toBe(400);
    }
    expect((await errorOf(new TextEncoder().encode('1\n2\n3\n'), 'application/octet-stream')).code).toBe('invalid_bitmap');
    const trailing = await errorOf(Buffer.concat([bytes, Buffer.from([0, 0])]), 'application/octet-stream');
    expect(trailing.message).toContain(`ends after ${bytes.length} bytes`);
  });

  it('round-trips through serializeBitmap and deserializeBitmap', () => {
    expect(deserializeBitmap(serializeBitmap(bitmap)).isEqual(bitmap)).toBe(true);
    expect(deserializeBitmap(serializeBitmap(new RoaringBitmap32())).size).toBe(0);
    expect(() => deserializeBitmap(new Uint8Array(0))).toThrow(expect.objectContaining({ code: 'invalid_bitmap' }));
  });
});

describe('bitmap export', () => {
  const bitmap = RoaringBitmap32.from([4294967295, 0, 9, 10, 99, 100, 123456789]);

  it('writes one ID per line as CSV, with the file name and count in the headers', async () => {
    const response = bitmapExportResponse(idText, bitmap, 'csv', 'step: welcome');
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="step__welcome.csv"');
    expect(response.headers.get('x-crowdflow-count')).toBe('7');
    expect(await response.text()).toBe('0\n9\n10\n99\n100\n123456789\n4294967295\n');
  });

  it('writes a JSON array, and honours a limit', async () => {
    expect(JSON.parse(await bitmapExportResponse(idText, bitmap, 'json', 'x').text())).toEqual(bitmap.toArray());
    expect(await bitmapExportResponse(idText, bitmap, 'json', 'x', 2).text()).toBe('[0,9]\n');
    expect(await bitmapExportResponse(idText, bitmap, 'csv', 'x', 0).text()).toBe('');
    expect(await bitmapExportResponse(idText, new RoaringBitmap32(), 'json', 'x').text()).toBe('[]\n');
  });

  it('writes portable roaring bytes, limited to the first IDs when asked', async () => {
    const whole = Buffer.from(await bitmapExportResponse(idText, bitmap, 'roaring', 'x').arrayBuffer());
    expect(deserializeBitmap(whole).isEqual(bitmap)).toBe(true);
    const first3 = bitmapExportResponse(idText, bitmap, 'roaring', 'x', 3);
    expect(first3.headers.get('content-disposition')).toBe('attachment; filename="x.roaring"');
    expect(deserializeBitmap(Buffer.from(await first3.arrayBuffer())).toArray()).toEqual([0, 9, 10]);
  });

  it('exports what the bitmap held when asked, even if it changes while streaming', async () => {
    const live = RoaringBitmap32.fromRange(0, 200_000);
    const response = bitmapExportResponse(idText, live, 'csv', 'live');
    live.clear();
    const lines = (await response.text()).split('\n');
    expect(lines.length).toBe(200_001);
    expect(lines[199_999]).toBe('199999');
  });
});

describe('radixSortUint32', () => {
  it('sorts like TypedArray#sort: duplicates, 0 and 2^32-1, values equal in one half-word, empty input', () => {
    const next = seededRandom(3);
    const cases = [
      new Uint32Array(0),
      Uint32Array.from([4294967295, 0, 65536, 65535, 65536, 1, 4294901760, 0]),
      Uint32Array.from({ length: 50_000 }, () => Math.floor(next() * 2 ** 32)),
      Uint32Array.from({ length: 50_000 }, () => Math.floor(next() * 100) * 65536 + 7),
    ];
    for (const values of cases) {
      const expected = values.slice().sort();
      expect(radixSortUint32(values, new Uint32Array(values.length + 3))).toEqual(expected);
    }
  });

  it('is what the upload parser sorts with: a shuffled 1.5M-ID upload (two sink batches) parses to exactly its IDs', async () => {
    const ids = sparseIds(1_500_000, 5);
    const text = new TextEncoder().encode(`${Array.from(ids).join('\n')}\n`);
    const parsed = await parseCrowdUpload(
      (async function* () {
        yield text;
      })(),
      'text/plain',
      64 * LIMIT,
    );
    expect(parsed.size).toBe(ids.length);
    expect(parsed.isEqual(RoaringBitmap32.from(ids))).toBe(true);
  });
});
