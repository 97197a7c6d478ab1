// The request thread's side of the export table thread (table-thread.ts): one thread per process, started by the first
// export with columns and kept (unref'd) after it. Each export is a `TableSession`: pages go in, the file's bytes and
// the thread's requests for more (`credit`) come back in order. A thread that fails fails its open exports.
import type { ColumnSpec, ColumnValues } from '../profiles/columns';
import { OwnedThread } from '../source-thread';
import type { FromTableThread, TableFormat, ToTableThread } from './table-thread';

export type TableEvent = { kind: 'bytes'; bytes: Uint8Array } | { kind: 'credit' } | { kind: 'done' };

/** One export in the thread: send pages when it asks, read what it writes. */
export class TableSession {
  private readonly events: Array<TableEvent | Error> = [];
  private waiting: ((event: TableEvent | Error) => void) | undefined;
  private closed = false;

  constructor(
    private readonly id: number,
    private readonly send: (message: ToTableThread, transfer?: ArrayBuffer[]) => void,
    private readonly forget: (id: number) => void,
  ) {}

  /** The next thing the thread said: bytes of the file, a request for a page, or the end. */
  next(): Promise<TableEvent> {
    const ready = this.events.shift();
    if (ready) return ready instanceof Error ? Promise.reject(ready) : Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      this.waiting = (event) => (event instanceof Error ? reject(event) : resolve(event));
    });
  }

  /** A page of users and their values; `ids` and the columns' arrays are transferred (unusable here afterwards). */
  page(ids: Uint32Array, values: ColumnValues[]): void {
    const buffers = values.flatMap((column) => (column.kind === 'string' ? [column.codes.buffer] : [column.values.buffer, column.present.buffer]));
    this.send({ kind: 'page', id: this.id, ids, values }, [ids.buffer, ...buffers] as ArrayBuffer[]);
  }

  end(): void {
    this.send({ kind: 'end', id: this.id });
  }

  /** The download stopped: the thread drops the export. */
  drop(): void {
    if (this.closed) return;
    this.closed = true;
    this.send({ kind: 'drop', id: this.id });
    this.forget(this.id);
  }

  deliver(event: TableEvent | Error): void {
    if (event instanceof Error || event.kind === 'done') {
      this.closed = true;
      this.forget(this.id);
    }
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) waiting(event);
    else this.events.push(event);
  }
}

export class TableFormatter {
  private readonly sessions = new Map<number, TableSession>();
  private nextId = 0;
  private readonly thread = new OwnedThread<FromTableThread>('server/exports/table-thread.ts', 'the export table thread', {
    message: (message) => {
      const session = this.sessions.get(message.id);
      if (!session) return;
      if (message.kind === 'error') session.deliver(new Error(`export table thread: ${message.message}`));
      else session.deliver(message.kind === 'bytes' ? { kind: 'bytes', bytes: message.bytes } : { kind: message.kind });
    },
    fail: (error) => {
      for (const session of [...this.sessions.values()]) session.deliver(error);
      this.sessions.clear();
    },
  });

  open(format: TableFormat, columns: ColumnSpec[], rowGroupRows: number): TableSession {
    const worker = this.thread.running();
    const id = this.nextId++;
    const session = new TableSession(
      id,
      (message, transfer) => worker.postMessage(message, transfer ?? []),
      (done) => this.sessions.delete(done),
    );
    this.sessions.set(id, session);
    worker.postMessage({ kind: 'open', id, format, columns, rowGroupRows } satisfies ToTableThread);
    return session;
  }

  /** Ends the thread (an app's close: a process that builds apps one after another would keep each one's otherwise). */
  close(): Promise<void> {
    return this.thread.close();
  }
}
