// A crowd upload as it streams in: its format from the Content-Type, its size capped, its bytes handed to the
// format's scanner (server/crowd/id-scanner.ts) chunk by chunk, or collected and deserialized for roaring.
import { AppError } from '../errors';
import { deserializeBitmap, type RoaringBitmap32 } from './bitmap';
import { JsonIdScanner, TextIdScanner } from './id-scanner';

export type UploadFormat = 'text' | 'json' | 'roaring';

const FORMATS: Record<string, UploadFormat> = {
  'text/plain': 'text',
  'text/csv': 'text',
  'application/json': 'json',
  'application/octet-stream': 'roaring',
};

/** Maps a Content-Type to an upload format; anything else is a 415 naming the accepted types. */
export function uploadFormat(contentType: string | null | undefined): UploadFormat {
  const mediaType = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const format = FORMATS[mediaType];
  if (!format) {
    throw new AppError(
      'unsupported_media_type',
      `${mediaType ? `Content-Type ${mediaType} is not a crowd format` : 'The upload has no Content-Type'}; use ${Object.keys(FORMATS).join(', ')}`,
    );
  }
  return format;
}

export type ByteSource = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

/**
 * Parses a crowd upload as it streams in; more than `maxBytes` bytes is a 413 and nothing is kept. `checkUsers`
 * throws for a user count the caller refuses: a roaring upload's is read from its validated bytes, before it is deserialized.
 */
export async function parseCrowdUpload(
  body: ByteSource | null,
  contentType: string | null | undefined,
  maxBytes: number,
  checkUsers: (users: number) => void = () => undefined,
): Promise<RoaringBitmap32> {
  const format = uploadFormat(contentType);
  const chunks = cappedChunks(body, maxBytes);
  if (format === 'roaring') {
    const bytes = await collect(chunks);
    if (bytes.byteLength === 0) throw emptyUpload();
    return deserializeBitmap(bytes, checkUsers);
  }
  const scanner = format === 'json' ? new JsonIdScanner() : new TextIdScanner();
  let received = 0;
  for await (const chunk of chunks) {
    received += chunk.byteLength;
    scanner.feed(chunk);
  }
  if (received === 0) throw emptyUpload();
  return scanner.end();
}

/**
 * One rule for every format: a body of 0 bytes is refused, since it is far likelier a failed upload (a missing file,
 * a dropped stream) than a wish to empty the crowd. An empty crowd is sent as its format's empty value.
 */
const emptyUpload = () =>
  new AppError(
    'empty_upload',
    'The upload is empty (0 bytes). To store a crowd with no users, send an empty value: a newline (text/CSV), [] (JSON) or an empty portable roaring bitmap',
  );

async function* cappedChunks(body: ByteSource | null, maxBytes: number): AsyncGenerator<Uint8Array> {
  if (!body) return;
  let total = 0;
  const tooLarge = () => new AppError('payload_too_large', `The upload is larger than the limit of ${maxBytes} bytes (CROWDFLOW_MAX_UPLOAD_BYTES)`);
  if (isReadableStream(body)) {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        total += value.byteLength;
        if (total > maxBytes) throw tooLarge();
        yield value;
      }
    } finally {
      // Stops the transfer when we give up early (too large, bad ID); a finished stream ignores it.
      await reader.cancel().catch(() => undefined);
    }
  }
  for await (const value of body) {
    total += value.byteLength;
    if (total > maxBytes) throw tooLarge();
    yield value;
  }
}

function isReadableStream(body: ByteSource): body is ReadableStream<Uint8Array> {
  return typeof (body as ReadableStream).getReader === 'function';
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}
