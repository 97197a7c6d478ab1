// Importing a profile file from the browser: the file is sent in parts of about PART_BYTES, cut at line ends, each
// part one streamed POST …/profiles/import (the browser reads it from disk as it sends; the page never holds the
// file). After each part the server has committed its lines, so the progress shows both the bytes sent and the
// lines imported so far, and a failure says exactly how much of the file is in. A CSV part repeats the header row.
import { ApiError, API_ROOT, tenantPath } from './api';

/** Bytes per request: small enough for "lines imported" to move every second or so, large enough to cost little. */
export const PART_BYTES = 2 * 1024 * 1024;
/** How far past a part's end to look for the line end (a profile line is at most 256 KiB on the server). */
const LINE_WINDOW = 64 * 1024;
const NEWLINE = 0x0a;

export type ImportFormat = 'ndjson' | 'csv';
export type ImportProgress = { bytesSent: number; totalBytes: number; linesImported: number; created: number };
export type ImportSummary = ImportProgress & { parts: number; ms: number };
type PartResult = { lines: number; users: number; created: number; chunks: number; ms: number };

/** NDJSON for .ndjson/.jsonl/.json, CSV for .csv; otherwise the first character decides (`{` is NDJSON). */
export async function detectFormat(file: Blob & { name?: string }): Promise<ImportFormat> {
  const name = (file.name ?? '').toLowerCase();
  if (/\.(ndjson|jsonl|json)$/.test(name)) return 'ndjson';
  if (name.endsWith('.csv')) return 'csv';
  const start = (await file.slice(0, 256).text()).trimStart();
  return start.startsWith('{') ? 'ndjson' : 'csv';
}

/** The offset just past the first line end at or after `from` (the file's size when there is none). */
async function lineEndAfter(file: Blob, from: number): Promise<number> {
  for (let at = from; at < file.size; at += LINE_WINDOW) {
    const window = new Uint8Array(await file.slice(at, at + LINE_WINDOW).arrayBuffer());
    const found = window.indexOf(NEWLINE);
    if (found !== -1) return at + found + 1;
  }
  return file.size;
}

/** Line ends in the first `end` bytes, read as a stream (asked only to name a bad line's number in the whole file). */
async function linesBefore(file: Blob, end: number): Promise<number> {
  let count = 0;
  const reader = file.slice(0, end).stream().getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return count;
    for (let i = value.indexOf(NEWLINE); i !== -1; i = value.indexOf(NEWLINE, i + 1)) count++;
  }
}

/** One part as one POST with upload progress; rejects with the server's ApiError. */
function postPart(path: string, body: Blob, contentType: string, onSent: (bytes: number) => void, signal?: AbortSignal): Promise<PartResult> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', `${API_ROOT}${path}`);
    request.setRequestHeader('content-type', contentType);
    request.upload.onprogress = (event) => onSent(event.loaded);
    request.onerror = () => reject(new ApiError(0, 'network', 'The upload could not reach the server'));
    request.onabort = () => reject(new ApiError(0, 'aborted', 'The import was stopped'));
    request.onload = () => {
      let body: { error?: { code: string; message: string; details?: unknown } } | PartResult | undefined;
      try {
        body = request.responseText ? JSON.parse(request.responseText) : undefined;
      } catch {
        body = undefined;
      }
      if (request.status >= 200 && request.status < 300 && body) return resolve(body as PartResult);
      const error = body && 'error' in body ? body.error : undefined;
      reject(
        error
          ? new ApiError(request.status, error.code, error.message, error.details)
          : new ApiError(request.status, 'http_error', request.responseText.slice(0, 200) || `HTTP ${request.status}`),
      );
    };
    signal?.addEventListener('abort', () => request.abort(), { once: true });
    request.send(body);
  });
}

/**
 * A bad line's error, said about the whole file: the server numbers lines within the part it was sent, and counts the
 * lines it committed of that part; both are turned into the file's line number and the file's lines imported.
 */
async function inFileTerms(error: ApiError, file: Blob, format: ImportFormat, partStart: number, importedBefore: number): Promise<ApiError> {
  const details = error.details as { line?: number; problem?: string; committedLines?: number } | undefined;
  if (error.code !== 'validation_failed' || typeof details?.line !== 'number') return error;
  // a CSV part starts with the repeated header row (its line 1); the part's line 2 is the file's line after `partStart`
  const before = await linesBefore(file, partStart);
  const line = format === 'csv' ? before + details.line - 1 : before + details.line;
  const imported = importedBefore + (details.committedLines ?? 0);
  // the server commits in chunks, in order: what is in is the file's first `imported` lines, whatever the bad line's chunk held is not
  const message =
    `Line ${line.toLocaleString('en-US')}: ${details.problem ?? error.message}. The file's first ${imported.toLocaleString('en-US')} ` +
    `lines were imported, nothing after them. Fix the line and import the file again: lines imported twice merge to the same profiles.`;
  return new ApiError(error.status, error.code, message, { ...details, line, importedLines: imported });
}

export async function importProfileFile(
  tenant: string,
  file: Blob,
  format: ImportFormat,
  options: { types?: string; onProgress?: (progress: ImportProgress) => void; signal?: AbortSignal } = {},
): Promise<ImportSummary> {
  if (file.size === 0) throw new ApiError(400, 'empty_file', 'The file is empty');
  const started = performance.now();
  const query = options.types?.trim() ? `?types=${encodeURIComponent(options.types.trim())}` : '';
  const path = tenantPath(tenant, `/profiles/import${query}`);
  const contentType = format === 'csv' ? 'text/csv' : 'application/x-ndjson';
  const progress: ImportProgress = { bytesSent: 0, totalBytes: file.size, linesImported: 0, created: 0 };
  const report = () => options.onProgress?.({ ...progress });
  let start = 0;
  let header: Blob | null = null;
  if (format === 'csv') {
    start = await lineEndAfter(file, 0);
    header = file.slice(0, start);
    if (!(await header.text()).endsWith('\n')) header = new Blob([header, '\n']);
  }
  let parts = 0;
  report();
  while (start < file.size || parts === 0) {
    const end = await lineEndAfter(file, Math.min(file.size, start + PART_BYTES) - 1);
    const data = file.slice(start, end);
    const body = header ? new Blob([header, data]) : data;
    const extra = body.size - data.size;
    const sentBefore = start;
    let result: PartResult;
    try {
      result = await postPart(
        path,
        body,
        contentType,
        (sent) => {
          progress.bytesSent = sentBefore + Math.max(0, sent - extra);
          report();
        },
        options.signal,
      );
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const restated = await inFileTerms(error, file, format, start, progress.linesImported);
      const imported = (restated.details as { importedLines?: number } | undefined)?.importedLines;
      if (imported !== undefined) {
        progress.linesImported = imported; // the chunks of the failed part committed before its bad line
        report();
      }
      throw restated;
    }
    parts++;
    progress.bytesSent = end;
    progress.linesImported += result.lines;
    progress.created += result.created;
    report();
    start = end;
  }
  return { ...progress, parts, ms: Math.round(performance.now() - started) };
}
