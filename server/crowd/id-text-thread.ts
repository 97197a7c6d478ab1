// The export formatter thread (started by id-text-formatter.ts): formats each page of IDs it is sent and sends the
// bytes back; both cross by transfer, not by copy.
import { parentPort } from 'node:worker_threads';
import { formatIdPage } from './id-text';

export type IdTextJob = { id: number; ids: Uint32Array; asJson: boolean; afterEarlierIds: boolean };
export type IdTextReply = { kind: 'page'; id: number; bytes: Uint8Array };

parentPort?.on('message', ({ id, ids, asJson, afterEarlierIds }: IdTextJob) => {
  const bytes = formatIdPage(ids, asJson, afterEarlierIds);
  parentPort?.postMessage({ kind: 'page', id, bytes } satisfies IdTextReply, [bytes.buffer as ArrayBuffer]);
});
