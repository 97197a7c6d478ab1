import { afterAll, describe, expect, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { bitmapExportResponse } from '../../server/crowd/export';
import { parseCrowdUpload } from '../../server/crowd/parse';
import { loadCrowd, saveCrowd } from '../../server/crowd/store';
import { tenantRow } from '../helpers/tenant-row';
import { database } from '../helpers/app-db';
import { IdTextFormatter } from '../../server/crowd/id-text-formatter';

/** The text formats' writer thread, as an app holds one. */
const idText = new IdTextFormatter();
afterAll(() => idText.close());

// 2^20 users: many 64 KB upload chunks (an ID cut at each edge) and 16,384-ID export pages, and a stored crowd of
// several hundred KB. How fast 10M users go through the same code is the bench's (bench/scenarios/crowd.ts).
const USERS = 1 << 20;
const CHUNK = 64 * 1024;

/** 2^20 distinct IDs spread over 0 … 2^22, in a scrambled order (k·7919 mod 2^20 visits every k once). */
function scrambledIds(): Uint32Array {
  const ids = new Uint32Array(USERS);
  for (let k = 0; k < USERS; k++) {
    const i = (k * 7919) % USERS;
    ids[k] = i * 4 + (Math.imul(i, 2654435761) >>> 30);
  }
  return ids;
}

/** One ID per line, written independently of the exporter under test. */
function asText(ids: Uint32Array): Buffer {
  const out = Buffer.allocUnsafe(ids.length * 11);
  let position = 0;
  for (const id of ids) position += out.write(`${id}\n`, position, 'latin1');
  return out.subarray(0, position);
}

async function* inChunks(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += CHUNK) yield bytes.subarray(offset, offset + CHUNK);
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  console.log(`[crowd figures] ${label}: ${Math.round(performance.now() - started)} ms`);
  return result;
}

describe('2^20-user crowd round trip', () => {
  it('parses text, exports CSV, JSON and roaring, and reads each back to the same crowd', async () => {
    const ids = scrambledIds();
    const expected = new RoaringBitmap32();
    expected.addMany(ids);
    expect(expected.size).toBe(USERS);
    const text = asText(ids);

    const parsed = await timed(`parse ${USERS} IDs of text (${(text.length / 1e6).toFixed(0)} MB)`, () =>
      parseCrowdUpload(inChunks(text), 'text/plain', text.length),
    );
    expect(parsed.size).toBe(USERS);
    expect(parsed.isEqual(expected)).toBe(true);

    const csv = await timed('export CSV', async () => Buffer.from(await bitmapExportResponse(idText, parsed, 'csv', 'all').arrayBuffer()));
    expect(csv.equals(asText(expected.toUint32Array()))).toBe(true);
    const reparsed = await timed('parse the CSV export', () => parseCrowdUpload(inChunks(csv), 'text/csv', csv.length));
    expect(reparsed.isEqual(expected)).toBe(true);

    const json = await timed('export JSON', async () => Buffer.from(await bitmapExportResponse(idText, parsed, 'json', 'all').arrayBuffer()));
    const fromJson = await timed('parse the JSON export', () => parseCrowdUpload(inChunks(json), 'application/json', json.length));
    expect(fromJson.isEqual(expected)).toBe(true);

    const roaring = Buffer.from(await bitmapExportResponse(idText, parsed, 'roaring', 'all').arrayBuffer());
    console.log(`[crowd figures] portable roaring: ${roaring.length} bytes (${(roaring.length / USERS).toFixed(2)} bytes per user)`);
    const fromRoaring = await timed('parse the roaring upload', () => parseCrowdUpload(inChunks(roaring), 'application/octet-stream', roaring.length));
    expect(fromRoaring.isEqual(expected)).toBe(true);

    await tenantRow('tn_big');
    await timed('save the crowd', () => saveCrowd(database(), 'tn_big', 'everyone', fromRoaring, 'create'));
    const loaded = await timed('load the crowd', () => loadCrowd(database(), 'tn_big', 'everyone'));
    expect(loaded?.count).toBe(USERS);
    expect(loaded?.sizeBytes).toBe(serializeBitmap(expected).length);
    expect(loaded?.bitmap.isEqual(expected)).toBe(true);
  });
});
