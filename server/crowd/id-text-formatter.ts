// The request thread's side of the export formatter thread (id-text-thread.ts): one thread per process, started on
// the first text export and kept (unref'd) after it; a page is sent as IDs and comes back as text bytes. A thread that
// fails fails the pages it held (their exports end with an error) and is started again by the next page.
import { OwnedThread } from '../source-thread';
import type { IdTextJob, IdTextReply } from './id-text-thread';

type Pending = { resolve: (bytes: Uint8Array) => void; reject: (error: Error) => void };

export class IdTextFormatter {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private readonly thread = new OwnedThread<IdTextReply>('server/crowd/id-text-thread.ts', 'the export formatter thread', {
    message: (reply) => {
      const call = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      call?.resolve(reply.bytes);
    },
    fail: (error) => {
      for (const call of this.pending.values()) call.reject(error);
      this.pending.clear();
    },
  });

  /** The page's text; `ids` is transferred to the thread (unusable here afterwards). */
  format(ids: Uint32Array, asJson: boolean, afterEarlierIds: boolean): Promise<Uint8Array> {
    const worker = this.thread.running();
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ids, asJson, afterEarlierIds } satisfies IdTextJob, [ids.buffer as ArrayBuffer]);
    });
  }

  /** Ends the thread (an app's close: a process that builds apps one after another would keep each one's otherwise). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
