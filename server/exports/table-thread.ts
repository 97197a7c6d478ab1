// The export table thread (started by table-formatter.ts): writes exports with columns, CSV or Parquet, from pages of
// users and their column values. Parquet goes through arrow-rs's writer compiled to WebAssembly (parquet-wasm): each
// page is one Arrow record batch and one row group, and the file's bytes come back as the writer emits them. The
// thread asks for each page when the writer wants it (`credit`), so an export holds about one row group at a time.
import { parentPort } from 'node:worker_threads';
import * as parquet from 'parquet-wasm/node';
import type { ColumnSpec, ColumnValues } from '../profiles/columns';
import { arrowBatch, arrowTypes, csvHeader, csvRows } from './table-format';

export type TableFormat = 'csv' | 'parquet';

export type ToTableThread =
  | { kind: 'open'; id: number; format: TableFormat; columns: ColumnSpec[]; rowGroupRows: number }
  | { kind: 'page'; id: number; ids: Uint32Array; values: ColumnValues[] }
  | { kind: 'end'; id: number }
  | { kind: 'drop'; id: number };

export type FromTableThread =
  | { kind: 'bytes'; id: number; bytes: Uint8Array }
  /** Send the next page. */
  | { kind: 'credit'; id: number }
  | { kind: 'done'; id: number }
  | { kind: 'error'; id: number; message: string };

interface TableWriter {
  page(ids: Uint32Array, values: ColumnValues[]): void;
  end(): void;
  drop(): void;
}

/** The exports being written, by id: kept at the top level of the thread's entry, which is the thread's root. */
const writers = new Map<number, TableWriter>();
const post = (message: FromTableThread, transfer: ArrayBuffer[] = []) => parentPort?.postMessage(message, transfer);
const encoder = new TextEncoder();

function sendText(id: number, text: string): void {
  const bytes = encoder.encode(text);
  post({ kind: 'bytes', id, bytes }, [bytes.buffer as ArrayBuffer]);
}

function csvWriter(id: number, columns: ColumnSpec[]): TableWriter {
  sendText(id, csvHeader(columns));
  post({ kind: 'credit', id });
  return {
    page(ids, values) {
      // The next page crosses while this one is written.
      post({ kind: 'credit', id });
      const bytes = csvRows(ids, values);
      post({ kind: 'bytes', id, bytes }, [bytes.buffer as ArrayBuffer]);
    },
    end: () => post({ kind: 'done', id }),
    drop() {},
  };
}

function parquetWriter(id: number, columns: ColumnSpec[], rowGroupRows: number): TableWriter {
  const types = arrowTypes(columns);
  let batches: ReadableStreamDefaultController<parquet.RecordBatch> | undefined;
  const source = new ReadableStream<parquet.RecordBatch>(
    {
      start(controller) {
        batches = controller;
      },
      // The writer took the batch before: ask for the next page.
      pull: () => post({ kind: 'credit', id }),
    },
    { highWaterMark: 0 },
  );
  let properties = new parquet.WriterPropertiesBuilder()
    .setCompression(parquet.Compression.SNAPPY)
    .setMaxRowGroupSize(rowGroupRows)
    // Min/max per row group for the user ID and number columns (readers skip row groups by them); none for strings,
    // whose statistics took a fifth of the writer's time for little use (their dictionaries already list the values).
    .setStatisticsEnabled(parquet.EnabledStatistics.None)
    .setColumnStatisticsEnabled('user', parquet.EnabledStatistics.Chunk)
    .setDictionaryEnabled(false)
    // Ascending user IDs as deltas: 10M of them take ≈ 0.3 MiB instead of ≈ 50 (Snappy finds little in plain int64s).
    .setColumnEncoding('user', parquet.Encoding.DELTA_BINARY_PACKED);
  // Strings dictionary-encoded; whole numbers and times as deltas; doubles plain (dictionaries of IDs and counts only cost time).
  for (const column of columns) {
    if (column.kind === 'string') properties = properties.setColumnDictionaryEnabled(column.name, true);
    else properties = properties.setColumnStatisticsEnabled(column.name, parquet.EnabledStatistics.Chunk);
    if (column.kind === 'int64' || column.kind === 'timestamp') properties = properties.setColumnEncoding(column.name, parquet.Encoding.DELTA_BINARY_PACKED);
  }
  let stopped = false;
  void (async () => {
    const reader = (await parquet.transformParquetStream(source, properties.build())).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (stopped) return;
      if (done) return post({ kind: 'done', id });
      const bytes = value instanceof Uint8Array ? value : new Uint8Array(value as ArrayBuffer);
      post({ kind: 'bytes', id, bytes }, [bytes.buffer as ArrayBuffer]);
    }
  })().catch((error: unknown) => post({ kind: 'error', id, message: error instanceof Error ? error.message : String(error) }));
  return {
    page(ids, values) {
      const table = parquet.Table.fromIPCStream(arrowBatch(columns, types, ids, values));
      for (const batch of table.recordBatches()) batches?.enqueue(batch);
      table.free();
    },
    end: () => batches?.close(),
    drop() {
      stopped = true;
      batches?.error(new Error('export cancelled'));
    },
  };
}

parentPort?.on('message', (message: ToTableThread) => {
  try {
    if (message.kind === 'open') {
      const { id, format, columns, rowGroupRows } = message;
      writers.set(id, format === 'csv' ? csvWriter(id, columns) : parquetWriter(id, columns, rowGroupRows));
      return;
    }
    const writer = writers.get(message.id);
    if (!writer) return;
    if (message.kind === 'page') writer.page(message.ids, message.values);
    else {
      if (message.kind === 'end') writer.end();
      else writer.drop();
      writers.delete(message.id);
    }
  } catch (error) {
    post({ kind: 'error', id: message.id, message: error instanceof Error ? error.message : String(error) });
  }
});
