// Crowd library scenarios: parsing uploads and writing exports (server/crowd), in an app that reads no storage.
import { bitmapExportResponse, parseCrowdUpload, RoaringBitmap32 } from '../../server/crowd';
import { chunked } from '../lib/data';
import { medianMs, medianTimes } from '../lib/report';
import { bareExportCsv, bareExportRoaring, bareParseText } from './limits';
import { IdTextFormatter } from '../../server/crowd/id-text-formatter';

/** The text formats' writer thread, as an app holds one. */
const idText = new IdTextFormatter();

const NO_LIMIT = Number.MAX_SAFE_INTEGER;

type Timed = { wallMs: number; cpuMs: number };

export interface CrowdFigures {
  parseText: Timed;
  parseRoaring: Timed;
  exportCsv: Timed;
  exportRoaring: Timed;
  parseTextLimitMs: number;
  parseRoaringLimitMs: number;
  exportCsvLimitMs: number;
  exportRoaringLimitMs: number;
}

export async function measureCrowd(text: Buffer, expectedSize: number, repeats: number): Promise<CrowdFigures> {
  let parsed: RoaringBitmap32 | undefined;
  const parseText = await medianTimes(repeats, async () => {
    parsed = await parseCrowdUpload(chunked(text), 'text/plain', NO_LIMIT);
  });
  if (parsed?.size !== expectedSize) throw new Error(`text upload parsed to ${parsed?.size} users, expected ${expectedSize}`);
  const parseTextLimitMs = await medianMs(repeats, () => bareParseText(text));

  const roaring = Buffer.from(parsed.serialize('portable'));
  const parseRoaring = await medianTimes(repeats + 2, async () => {
    parsed = await parseCrowdUpload(chunked(roaring), 'application/octet-stream', NO_LIMIT);
  });
  const parseRoaringLimitMs = await medianMs(repeats + 2, () => RoaringBitmap32.deserialize(roaring, 'portable'));

  const crowd = parsed;
  const exportCsv = await medianTimes(repeats, () => drain(bitmapExportResponse(idText, crowd, 'csv', 'bench')));
  const exportCsvLimitMs = await medianMs(repeats, () => bareExportCsv([crowd]));
  const exportRoaring = await medianTimes(repeats + 2, () => drain(bitmapExportResponse(idText, crowd, 'roaring', 'bench')));
  const exportRoaringLimitMs = await medianMs(repeats + 2, () => bareExportRoaring([crowd]));
  return { parseText, parseTextLimitMs, parseRoaring, parseRoaringLimitMs, exportCsv, exportCsvLimitMs, exportRoaring, exportRoaringLimitMs };
}

/** Reads a response body to its end, as a client downloading it would; returns the byte count. */
export async function drain(response: Response): Promise<number> {
  let bytes = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}
