// A profile import's body carried from the request thread to the engine thread, which parses it, writes its chunks
// and applies them to the one profile index (server/profiles/calls.ts). The request thread only moves bytes: each
// piece the socket delivers is copied once into a buffer of its own and transferred. Flow control keeps at most
// IMPORT_WINDOW_BYTES sent and not yet taken by the parser, so a client faster than the import is slowed by TCP (the
// body is not read from the socket meanwhile) instead of the engine thread's queue holding gigabytes.
import type { FromEngine, ToEngine } from './thread-protocol';

/** Bytes of an import's body sent to the engine thread and not yet taken by its parser, at most. */
export const IMPORT_WINDOW_BYTES = 4 * 1024 * 1024;

type Post = (message: ToEngine, transfer?: ArrayBuffer[]) => void;

/** The request thread's end of one import: sends the body, pausing while the window is full. */
export class ImportBodySender {
  private unread = 0;
  private finished = false;
  private wake: (() => void) | undefined;
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private complete = false;
  /** Why the body could not be read (the client went away), if it could not. */
  failure: Error | undefined;

  constructor(
    readonly id: number,
    private readonly post: Post,
  ) {}

  /** The engine thread's parser took `bytes` more. */
  taken(bytes: number): void {
    this.unread -= bytes;
    if (this.unread <= IMPORT_WINDOW_BYTES) this.resume();
  }

  /**
   * The import was answered (or failed): nothing more is sent. A body not read to its end is cancelled, as the import
   * did when it ran in this thread (the HTTP server reads and drops the rest after the answer).
   */
  finish(): void {
    this.finished = true;
    if (!this.complete) void this.reader?.cancel().catch(() => undefined);
    this.resume();
  }

  async send(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = (this.reader = body.getReader());
    try {
      while (!this.finished) {
        const { value, done } = await reader.read();
        if (this.finished) return;
        if (done) {
          this.complete = true;
          return this.post({ kind: 'import-end', id: this.id });
        }
        if (value.byteLength === 0) continue;
        // A copy of its own (a Buffer's slice() would be a view): the piece may share a larger buffer the stream owns.
        const bytes = new Uint8Array(value);
        this.unread += bytes.byteLength;
        this.post({ kind: 'import-bytes', id: this.id, bytes }, [bytes.buffer as ArrayBuffer]);
        while (!this.finished && this.unread > IMPORT_WINDOW_BYTES) await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } catch (error) {
      this.failure = error instanceof Error ? error : new Error(String(error));
      if (!this.finished) this.post({ kind: 'import-abort', id: this.id, message: this.failure.message });
    }
  }

  private resume(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** The engine thread's end of one import: the body as a stream its parser reads, fed by the request thread's messages. */
export class ImportBodyReceiver {
  private readonly pieces: Uint8Array[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  readonly stream: ReadableStream<Uint8Array>;

  constructor(
    readonly id: number,
    private readonly post: (message: FromEngine) => void,
  ) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          while (this.pieces.length === 0 && !this.ended && !this.failure) await new Promise<void>((resolve) => (this.wake = resolve));
          const piece = this.pieces.shift();
          if (piece) {
            controller.enqueue(piece);
            this.post({ kind: 'import-read', id: this.id, bytes: piece.byteLength });
          } else if (this.failure) controller.error(this.failure);
          else controller.close();
        },
      },
      // Nothing read ahead: a piece is taken (and the window reopened) only when the parser asks for it.
      { highWaterMark: 0 },
    );
  }

  received(message: Extract<ToEngine, { kind: 'import-bytes' | 'import-end' | 'import-abort' }>): void {
    if (message.kind === 'import-bytes') this.pieces.push(message.bytes);
    else if (message.kind === 'import-end') this.ended = true;
    else this.failure = new Error(`the import body ended early: ${message.message}`);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
