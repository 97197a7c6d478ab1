import { afterAll, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { bitmapExportResponse } from '../../server/crowd/export';
import { IdTextFormatter } from '../../server/crowd/id-text-formatter';

/** The text formats' writer thread, as an app holds one. */
const idText = new IdTextFormatter();
afterAll(() => idText.close());

// Text exports are formatted page by page in the export formatter thread (server/crowd/id-text-formatter.ts): the
// pages must join into exactly the text of the whole bitmap, in order, whatever the page borders.
const text = async (response: Response) => Buffer.from(await response.arrayBuffer()).toString('utf8');

describe('text exports', () => {
  const ids = [0, 9, 10, 99, 100, 65_535, 65_536, 4_294_967_295];
  for (let i = 0; i < 50_000; i++) ids.push(1_000_000 + i * 7);
  ids.sort((a, b) => a - b);
  const bitmap = RoaringBitmap32.from(ids);

  it('writes every ID over several pages as CSV lines and as one JSON array', async () => {
    expect(await text(bitmapExportResponse(idText, bitmap, 'csv', 'all'))).toBe(`${ids.join('\n')}\n`);
    expect(JSON.parse(await text(bitmapExportResponse(idText, bitmap, 'json', 'all')))).toEqual(ids);
  });

  it('keeps the smallest `limit` IDs, and writes an empty export as nothing or []', async () => {
    expect(await text(bitmapExportResponse(idText, bitmap, 'csv', 'some', 20_000))).toBe(`${ids.slice(0, 20_000).join('\n')}\n`);
    expect(JSON.parse(await text(bitmapExportResponse(idText, bitmap, 'json', 'some', 16_385)))).toEqual(ids.slice(0, 16_385));
    expect(await text(bitmapExportResponse(idText, bitmap, 'csv', 'none', 0))).toBe('');
    expect(await text(bitmapExportResponse(idText, new RoaringBitmap32(), 'json', 'none'))).toBe('[]\n');
  });

  it('runs exports side by side, each with its own pages', async () => {
    const other = RoaringBitmap32.from([5, 6, 7]);
    const [a, b, c] = await Promise.all([
      text(bitmapExportResponse(idText, bitmap, 'csv', 'a')),
      text(bitmapExportResponse(idText, other, 'json', 'b')),
      text(bitmapExportResponse(idText, bitmap, 'json', 'c', 3)),
    ]);
    expect([a, b, c]).toEqual([`${ids.join('\n')}\n`, '[5,6,7]\n', `[${ids.slice(0, 3).join(',')}]\n`]);
  });
});
