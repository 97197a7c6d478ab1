// `COPY … FROM STDIN` on a pg client, with no package beyond pg: pg runs any object with a `submit` method as a query
// and hands it the protocol's messages (the same hooks pg-copy-streams uses). The whole input is sent as copy data
// once the server asks for it; the query ends at ReadyForQuery, with the server's error if it refused a row.
import type pg from 'pg';

/** Pieces of copy data sent at most (the protocol allows more; smaller messages keep the socket's buffers small). */
const COPY_PIECE_BYTES = 1 << 20;

type CopyConnection = { query(text: string): void; sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };

class CopyFromStdin {
  private error: Error | undefined;
  callback: ((error: Error | null) => void) | undefined;

  constructor(
    readonly text: string,
    private readonly data: Buffer,
  ) {}

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    for (let at = 0; at < this.data.length; at += COPY_PIECE_BYTES) connection.sendCopyFromChunk(this.data.subarray(at, at + COPY_PIECE_BYTES));
    connection.endCopyFrom();
  }

  handleError(error: Error): void {
    this.error = error;
  }

  handleReadyForQuery(): void {
    this.callback?.(this.error ?? null);
  }

  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs `COPY <table> (…) FROM STDIN` (text format) on `client` with `data` as its rows. */
export function copyFromStdin(client: pg.PoolClient, sql: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const copy = new CopyFromStdin(sql, data);
    copy.callback = (error) => (error ? reject(error) : resolve());
    (client as unknown as { query(submittable: CopyFromStdin): void }).query(copy);
  });
}

/** A text value as a field of COPY's text format: JSON text never holds a raw tab or line break, only backslashes to double. */
export function copyTextField(text: string): string {
  return text.includes('\\') ? text.replaceAll('\\', '\\\\') : text;
}
