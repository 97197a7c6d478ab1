// The two ends of an import body's crossing to the engine thread (server/engine/profile-import-stream.ts), joined
// here by a MessageChannel as the client and the thread join them: every byte arrives in order, at most the window
// is ever sent and not yet taken, a body cancelled by an early answer stops being read, and a broken body fails the
// stream the parser reads.
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { IMPORT_WINDOW_BYTES, ImportBodyReceiver, ImportBodySender } from '../../server/engine/profile-import-stream';
import type { FromEngine, ToEngine } from '../../server/engine/thread-protocol';

const PIECE = 64 * 1024;
const channels: MessageChannel[] = [];
afterEach(() => {
  for (const channel of channels.splice(0)) channel.port1.close();
});

/** A sender and a receiver over a real MessagePort; `outstanding()` is what was sent and not yet taken, at most so far. */
function joined() {
  const channel = new MessageChannel();
  channels.push(channel);
  let sent = 0;
  let taken = 0;
  let mostOutstanding = 0;
  const sender = new ImportBodySender(1, (message, transfer) => {
    if (message.kind === 'import-bytes') sent += message.bytes.byteLength;
    mostOutstanding = Math.max(mostOutstanding, sent - taken);
    channel.port1.postMessage(message, transfer ?? []);
  });
  const receiver = new ImportBodyReceiver(1, (message: FromEngine) => channel.port2.postMessage(message));
  channel.port2.on('message', (message: ToEngine) => {
    if (message.kind === 'import-bytes' || message.kind === 'import-end' || message.kind === 'import-abort') receiver.received(message);
  });
  channel.port1.on('message', (message: FromEngine) => {
    if (message.kind === 'import-read') {
      taken += message.bytes;
      sender.taken(message.bytes);
    }
  });
  return { sender, receiver, mostOutstanding: () => mostOutstanding };
}

/** `total` bytes (byte i is i mod 251) in pieces of PIECE, each a view into one larger buffer as a socket's may be. */
function body(total: number, onPull?: (at: number) => void): ReadableStream<Uint8Array> {
  const whole = new Uint8Array(total).map((_, i) => i % 251);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      onPull?.(at);
      if (at >= total) return controller.close();
      controller.enqueue(whole.subarray(at, (at += PIECE)));
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>, slowly = false): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  const reader = stream.getReader();
  for (let piece = await reader.read(); !piece.done; piece = await reader.read()) {
    pieces.push(piece.value);
    if (slowly) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return Buffer.concat(pieces);
}

describe('an import body carried to the engine thread', () => {
  it('arrives whole and in order, with never more than the window sent ahead of the parser', async () => {
    const total = 5 * IMPORT_WINDOW_BYTES + 12_345;
    const { sender, receiver, mostOutstanding } = joined();
    const [received] = await Promise.all([readAll(receiver.stream, true), sender.send(body(total))]);
    expect(received.byteLength).toBe(total);
    expect(received.every((byte, i) => byte === i % 251)).toBe(true);
    expect(mostOutstanding()).toBeLessThanOrEqual(IMPORT_WINDOW_BYTES + PIECE);
    expect(mostOutstanding()).toBeGreaterThan(IMPORT_WINDOW_BYTES / 2); // the window is used, not one piece at a time
  });

  it('stops reading the body once the import is answered early', async () => {
    const total = 20 * IMPORT_WINDOW_BYTES;
    let readUpTo = 0;
    const { sender, receiver } = joined();
    const sending = sender.send(body(total, (at) => (readUpTo = at)));
    const reader = receiver.stream.getReader();
    await reader.read(); // the parser took one piece, then refused a line
    sender.finish();
    await sending;
    // The window, the pieces its credits let through meanwhile and the one the body stream reads ahead: not the rest.
    expect(readUpTo).toBeLessThanOrEqual(IMPORT_WINDOW_BYTES + 4 * PIECE);
  });

  it('fails the parser’s stream when the body breaks off', async () => {
    const { sender, receiver } = joined();
    let pulls = 0;
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ < 3) controller.enqueue(new Uint8Array(PIECE));
        else controller.error(new Error('socket hang up'));
      },
    });
    const [read] = await Promise.allSettled([readAll(receiver.stream), sender.send(broken)]);
    expect(read).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('socket hang up') } });
    expect(sender.failure?.message).toBe('socket hang up');
  });
});
