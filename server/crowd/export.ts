import { z } from 'zod';
import { RoaringBitmap32, serializeBitmap } from './bitmap';
import type { IdTextFormatter } from './id-text-formatter';

export const EXPORT_FORMATS = ['csv', 'roaring', 'json', 'parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** The formats an export of IDs alone is written in here; `parquet` and any export with columns go through server/exports/. */
export type IdExportFormat = Exclude<ExportFormat, 'parquet'>;

/** `?format=csv|roaring|json|parquet&limit=N&columns=a,b` of an export route. */
export const ExportQuery = z.strictObject({
  format: z.enum(EXPORT_FORMATS).default('csv').describe('csv (default), json, roaring (portable bitmap) or parquet'),
  limit: z.coerce.number().int().min(0).optional(),
  columns: z
    .string()
    .optional()
    .transform((text) => (text === undefined ? [] : text.split(',').map((name) => name.trim())))
    .describe('Comma-separated profile attribute paths (dotted for nested keys) written after the user ID, with a header row in CSV'),
});

/** IDs per page of a text export, formatted in the export formatter thread. */
const PAGE_IDS = 16384;
/** Pages asked of the formatter ahead of the one the response is waiting for. */
const PAGES_AHEAD = 2;

const CONTENT_TYPES: Record<IdExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  roaring: 'application/octet-stream',
};

const EXTENSIONS: Record<IdExportFormat, string> = { csv: 'csv', json: 'json', roaring: 'roaring' };

/**
 * Streams a bitmap's IDs as a download: `csv` is one ID per line (no header, so it uploads back as is),
 * `json` an array, `roaring` the portable bytes. `filename` is without extension; `limit` keeps the
 * smallest `limit` IDs. The bitmap is copied first, so the caller may keep changing it. `formatter` writes the text
 * formats (the app's, AppState.formatters).
 */
export function bitmapExportResponse(formatter: IdTextFormatter, bitmap: RoaringBitmap32, format: IdExportFormat, filename: string, limit?: number): Response {
  const total = limit === undefined ? bitmap.size : Math.max(0, Math.min(bitmap.size, Math.floor(limit)));
  const headers: Record<string, string> = {
    'content-type': CONTENT_TYPES[format],
    'content-disposition': `attachment; filename="${safeFilename(filename)}.${EXTENSIONS[format]}"`,
    'x-crowdflow-count': String(total),
    'cache-control': 'no-store',
  };
  if (format === 'roaring') {
    const source = total === bitmap.size ? bitmap : firstIds(bitmap, total);
    const bytes = serializeBitmap(source);
    return new Response(bytes, {
      headers: { ...headers, 'content-length': String(bytes.byteLength) },
    });
  }
  return new Response(idTextStream(formatter, bitmap.clone(), total, format === 'json'), { headers });
}

function firstIds(bitmap: RoaringBitmap32, count: number): RoaringBitmap32 {
  return RoaringBitmap32.from(bitmap.rangeUint32Array(new Uint32Array(count), 0, count));
}

export function safeFilename(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120) || 'crowd';
}

/**
 * The IDs as text, a page of PAGE_IDS IDs per chunk: this thread only copies each page's IDs out of the bitmap (a
 * native call), the export formatter thread writes their text (server/crowd/id-text-formatter.ts), a few pages
 * ahead of the response. Formatted here, a 10M-ID export held the thread that answers every other request for about
 * a second of CPU in pages of 2–5 ms (bench "API latency under engine load").
 */
export function idTextStream(formatter: IdTextFormatter, bitmap: RoaringBitmap32, total: number, asJson: boolean): ReadableStream<Uint8Array> {
  const ahead: Promise<Uint8Array>[] = [];
  let requested = 0;
  const requestPages = () => {
    while (ahead.length <= PAGES_AHEAD && requested < total) {
      const count = Math.min(PAGE_IDS, total - requested);
      const page = formatter.format(bitmap.rangeUint32Array(new Uint32Array(count), requested, count), asJson, requested > 0);
      // A failed thread rejects every page it held; the one awaited below reports it, the rest must not crash the process.
      page.catch(() => undefined);
      ahead.push(page);
      requested += count;
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      requestPages();
      const next = ahead.shift();
      if (next) return controller.enqueue(await next);
      if (asJson) controller.enqueue(new TextEncoder().encode(total > 0 ? ']\n' : '[]\n'));
      controller.close();
    },
    cancel() {
      ahead.length = 0; // pages already asked for are formatted and dropped
    },
  });
}
