// A request body handed to a route handler as a web stream, and what becomes of the part the handler did not read.
//
// Node's HTTP server reads and drops an unread body by itself only when nothing ever listened to the request
// (`resOnFinish` → `req._dump()` when `!req._consuming`). Once a body stream has been handed to a handler, the request
// counts as consumed, so a handler that answers early (a 400 at line 3 of a 500 MB import, a 413, a 401 before reading)
// left the rest of the body in the socket: the parser never reached the client's next request on that kept-alive
// connection, which hung. Node's own bridge (`Readable.toWeb`) destroys the request when the web stream is cancelled,
// and with it the socket, so the client lost the answer too (ECONNRESET).
//
// Here cancelling only stops delivering; once the answer is written, the rest of the body is read and dropped (a
// "lingering close", as nginx does), so the connection serves the client's next request. A client still sending past
// DRAIN_LIMIT_BYTES after the answer has its connection closed: answering `Connection: close` instead would close the
// socket with the body unread, and the kernel then resets the connection, which can destroy the answer before the
// client reads it (Node's http client reported EPIPE and never saw the 400).
import type { IncomingMessage } from 'node:http';

/** Bytes of an unread body read and dropped after the answer before the connection is closed instead. */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** Bytes the stream holds before it stops reading the socket (backpressure to the client). */
const HIGH_WATER_BYTES = 64 * 1024;

export class RequestBody {
  private received = 0;
  private abandoned = false;
  readonly stream: ReadableStream<Uint8Array>;

  constructor(private readonly incoming: IncomingMessage) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          incoming.on('data', (chunk: Buffer) => {
            this.received += chunk.length;
            if (this.abandoned) return;
            // The parser hands each chunk over in a buffer of its own: no copy (Readable.toWeb copies every chunk).
            controller.enqueue(chunk);
            if ((controller.desiredSize ?? 0) <= 0) incoming.pause();
          });
          incoming.once('end', () => this.abandoned || controller.close());
          incoming.once('error', (error) => this.abandoned || controller.error(error));
          incoming.pause();
        },
        pull: () => void incoming.resume(),
        cancel: () => {
          // The handler stopped early: nothing more is delivered, and the socket is left for settle() to decide.
          this.abandoned = true;
          incoming.pause();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: HIGH_WATER_BYTES }),
    );
  }

  /**
   * After the answer: a body the handler did not read to its end is read and dropped, so the parser reaches the
   * client's next request; past DRAIN_LIMIT_BYTES more the socket is closed.
   */
  settle(): void {
    if (this.incoming.readableEnded || this.incoming.destroyed) return;
    const drainFrom = this.received;
    this.abandoned = true;
    this.incoming.on('data', () => {
      if (this.received - drainFrom > DRAIN_LIMIT_BYTES) this.incoming.socket.destroy();
    });
    this.incoming.resume();
  }
}
