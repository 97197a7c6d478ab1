// Exports of a set of users (a step's, a crowd's, the converted ones) with profile columns, or as Parquet: the user ID
// and each asked attribute, CSV with a header row or Parquet with typed columns. Streamed page by page: this thread
// copies a page's IDs out of the bitmap, the engine thread reads their columns from the profile index
// (server/profiles/columns.ts), the export table thread writes them (table-thread.ts) — so the thread that answers
// requests only carries bytes. What the users are is decided before (the bitmap): a time parameter would change
// only that.
import { AppError, badRequest } from '../errors';
import { bitmapExportResponse, type ExportFormat, safeFilename } from '../crowd/export';
import type { RoaringBitmap32 } from '../crowd/bitmap';
import type { EngineHandle } from '../engine/handle';
import type { ColumnSpec, ColumnValues } from '../profiles/columns';
import type { IdTextFormatter } from '../crowd/id-text-formatter';
import type { TableFormatter } from './table-formatter';
import type { TableFormat } from './table-thread';

/** Users a page (and a Parquet row group). */
export const TABLE_PAGE_ROWS = 131_072;

/** Columns the engine computes rather than reads from profiles. */
const ENTERED_AT = 'entered_at';

export type ExportOptions = { format: ExportFormat; columns: string[]; limit?: number };

/** The clients of the threads that write an export's bytes: IDs as text, and tables with columns. */
export interface ExportFormatters {
  readonly idText: IdTextFormatter;
  readonly table: TableFormatter;
}

const CONTENT_TYPES: Record<TableFormat, string> = { csv: 'text/csv; charset=utf-8', parquet: 'application/vnd.apache.parquet' };

/**
 * The download of `bitmap`'s users: IDs alone as before (server/crowd/export.ts) unless columns are asked for or the
 * format is Parquet. Bad columns are refused (4xx naming them) before a byte is sent.
 */
export async function exportResponse(
  engine: EngineHandle,
  formatters: ExportFormatters,
  tenantId: string,
  bitmap: RoaringBitmap32,
  options: ExportOptions,
  filename: string,
): Promise<Response> {
  const { format, columns, limit } = options;
  if (columns.length === 0 && format !== 'parquet') return bitmapExportResponse(formatters.idText, bitmap, format, filename, limit);
  if (format !== 'csv' && format !== 'parquet') {
    throw badRequest(`format=${format} carries user IDs only: export columns as format=csv or format=parquet`, { path: 'format' });
  }
  checkColumnNames(columns);
  const specs = await engine.profiles.describeProfileColumns(tenantId, columns);
  const total = limit === undefined ? bitmap.size : Math.max(0, Math.min(bitmap.size, Math.floor(limit)));
  return new Response(tableStream(engine, formatters.table, tenantId, bitmap.clone(), total, format, specs), {
    headers: {
      'content-type': CONTENT_TYPES[format],
      'content-disposition': `attachment; filename="${safeFilename(filename)}.${format}"`,
      'x-crowdflow-count': String(total),
      'cache-control': 'no-store',
    },
  });
}

function checkColumnNames(columns: string[]): void {
  const empty = columns.indexOf('');
  if (empty >= 0) throw badRequest(`columns: name ${empty + 1} is empty (write attribute paths separated by commas)`, { path: 'columns' });
  const repeated = columns.filter((name, k) => columns.indexOf(name) !== k || name === 'user');
  if (repeated.length > 0) {
    throw badRequest(`columns: ${repeated.map((name) => `"${name}"`).join(', ')} named twice (the user ID is always the first column)`, { path: 'columns' });
  }
  // Entry times are kept per step as a few time buckets for delay and timeout steps only, never per user: there is no
  // time to write for a user, and a bucket's bounds are not the time they entered.
  if (columns.includes(ENTERED_AT)) {
    throw new AppError(
      'unprocessable',
      'Column "entered_at": the engine keeps no entry time per user (delay and timeout steps keep users in time buckets, other steps none), so it cannot be exported',
      { path: 'columns', column: ENTERED_AT },
    );
  }
}

/** Pages read from the profile index ahead of the one the table thread writes: reading and writing overlap. */
const PAGES_AHEAD = 2;

type Page = { ids: Uint32Array; values: ColumnValues[] };

function tableStream(
  engine: EngineHandle,
  formatter: TableFormatter,
  tenantId: string,
  bitmap: RoaringBitmap32,
  total: number,
  format: TableFormat,
  columns: ColumnSpec[],
): ReadableStream<Uint8Array> {
  const session = formatter.open(format, columns, TABLE_PAGE_ROWS);
  const ahead: Promise<Page>[] = [];
  let requested = 0;
  let ended = false;
  // The next pages' columns are read (in the engine thread) while the table thread writes this one; at most
  // PAGES_AHEAD pages wait, so memory stays a few pages whatever the export's size.
  const readAhead = () => {
    while (ahead.length < PAGES_AHEAD && requested < total) {
      const count = Math.min(TABLE_PAGE_ROWS, total - requested);
      const ids = bitmap.rangeUint32Array(new Uint32Array(count), requested, count);
      requested += count;
      const page = engine.profiles.readProfileColumns(tenantId, columns, ids).then((values) => ({ ids, values }));
      // A failed read is reported when its page is awaited; the pages after it must not crash the process meanwhile.
      page.catch(() => undefined);
      ahead.push(page);
    }
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        readAhead();
        for (;;) {
          const event = await session.next();
          if (event.kind === 'bytes') return controller.enqueue(event.bytes);
          if (event.kind === 'done') {
            bitmap.dispose();
            return controller.close();
          }
          const next = ahead.shift();
          if (!next) {
            if (!ended) session.end();
            ended = true;
            continue;
          }
          const { ids, values } = await next;
          session.page(ids, values);
          readAhead();
        }
      },
      cancel() {
        ahead.length = 0;
        session.drop();
        bitmap.dispose();
      },
    },
    { highWaterMark: 0 },
  );
}
