// CountsSample rows (server/engine/counts-history.ts samples and reads them): one per instance, resolution and bucket
// start, its counts as JSON; a sample written again for the same bucket replaces it.
import type { Database } from './database';

export type CountsSampleWrite = { instanceId: string; resolution: number; at: number; counts: string };

/** Writes the samples in one transaction. */
export async function writeCountsSamples(database: Database, samples: CountsSampleWrite[]): Promise<void> {
  if (samples.length === 0) return;
  const statements = samples.map(({ instanceId, resolution, at, counts }) => {
    const { params, bind } = database.dialect.parameters();
    return {
      sql: `INSERT INTO ${database.dialect.table('CountsSample')} ("instanceId", "resolution", "at", "counts") VALUES (${bind(instanceId)}, ${bind(resolution)}, ${bind(at)}, ${bind(counts)})
      ON CONFLICT ("instanceId", "resolution", "at") DO UPDATE SET "counts" = excluded."counts"`,
      params,
    };
  });
  await (await database.raw()).transaction(statements);
}
