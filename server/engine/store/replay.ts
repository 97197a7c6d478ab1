// What recovery reads back: a shard's checkpoint and the journal rows committed after it, in seq order.
import { raw } from '../../storage/raw';
import { dialect } from '../../storage/dialect';
import { num } from './row-number';

export async function loadCheckpoint(instanceId: string, partition: number): Promise<{ journalSeq: number; data: Uint8Array } | null> {
  const { params, bind } = dialect().parameters();
  const [row] = await (await raw()).query<{ journalSeq: unknown; data: Uint8Array }>(
    `SELECT "journalSeq", "data" FROM ${dialect().table('ShardCheckpoint')} WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}`,
    params,
  );
  return row ? { journalSeq: num(row.journalSeq), data: row.data } : null;
}

/** What replay needs of a journal row: the move, its time (delay/ttl buckets) and its edge count. */
export interface ReplayRow {
  seq: number;
  fromStep: string | null;
  toStep: string;
  user: number | null;
  bitmap: Uint8Array | null;
  count: number;
  timeMs: number;
}

/** Journal rows of one shard after `seq`, in seq order, in pages (recovery replays them onto the checkpoint). */
export async function* journalAfter(instanceId: string, partition: number, seq: number, pageSize = 50_000): AsyncGenerator<ReplayRow[]> {
  const rawDb = await raw();
  const number = dialect().numberColumn;
  const columns = `${number('seq')}, "fromStep", "toStep", ${number('user')}, "bitmap", ${number('count')}, ${number('timeMs')}`;
  for (let after = seq; ; ) {
    const { params, bind } = dialect().parameters();
    const rows = await rawDb.query<ReplayRow>(
      `SELECT ${columns} FROM ${dialect().table('Journal')}
       WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)} AND "seq" > ${bind(after)} ORDER BY "seq" LIMIT ${bind(pageSize)}`,
      params,
    );
    if (rows.length === 0) return;
    yield rows;
    after = num(rows[rows.length - 1].seq);
    if (rows.length < pageSize) return;
  }
}
