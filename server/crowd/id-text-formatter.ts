// The request thread's side of the export formatter thread (id-text-thread.ts): one thread per process, started on
// the first text export and kept (unref'd) after it; a page is sent as IDs and comes back as text bytes. A thread that
// fails fails the pages it held (their exports end with an error) and is started again by the next page.
import type { Worker } from 'node:worker_threads';
import { startThread, type ThreadStartFailed } from '../source-thread';
import type { IdTextJob, IdTextReply } from './id-text-thread';

type Pending = { resolve: (bytes: Uint8Array) => void; reject: (error: Error) => void };

export class IdTextFormatter {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  /** The page's text; `ids` is transferred to the thread (unusable here afterwards). */
  format(ids: Uint32Array, asJson: boolean, afterEarlierIds: boolean): Promise<Uint8Array> {
    const worker = (this.worker ??= this.spawn());
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ids, asJson, afterEarlierIds } satisfies IdTextJob, [ids.buffer as ArrayBuffer]);
    });
  }

  /** Ends the thread (an app's close: a process that builds apps one after another would keep each one's otherwise). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.fail(worker, new Error('the export formatter was closed'));
    await worker.terminate();
  }

  private spawn(): Worker {
    const worker = startThread({ source: 'server/crowd/id-text-thread.ts' });
    worker.unref();
    worker.on('message', (message: IdTextReply | ThreadStartFailed) => {
      if (message.kind === 'failed') return this.fail(worker, new Error(`the export formatter thread did not start: ${message.error.message}`));
      const call = this.pending.get(message.id);
      this.pending.delete(message.id);
      call?.resolve(message.bytes);
    });
    worker.on('error', (error) => this.fail(worker, error));
    worker.once('exit', (code) => this.fail(worker, new Error(`the export formatter thread exited (code ${code})`)));
    return worker;
  }

  private fail(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    void worker.terminate();
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }
}
