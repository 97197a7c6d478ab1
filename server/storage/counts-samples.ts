// CountsSample rows (server/engine/counts-history.ts samples and reads them): one per instance, resolution and bucket
// start, its counts as JSON; a sample written again for the same bucket replaces it.
import type { Database } from './database';

export type CountsSampleWrite = { tenantId: string; instanceId: string; resolution: number; at: number; counts: string };

/** Writes the samples in one transaction. */
export async function writeCountsSamples(database: Database, samples: CountsSampleWrite[]): Promise<void> {
  if (samples.length === 0) return;
  const statements = samples.map(({ tenantId, instanceId, resolution, at, counts }) => {
    const { params, bind } = database.dialect.parameters();
    return {
      sql: `INSERT INTO ${database.dialect.table('CountsSample')} ("tenantId", "instanceId", "resolution", "at", "counts")
      VALUES (${bind(tenantId)}, ${bind(instanceId)}, ${bind(resolution)}, ${bind(at)}, ${bind(counts)})
      ON CONFLICT ("tenantId", "instanceId", "resolution", "at") DO UPDATE SET "counts" = excluded."counts"`,
      params,
    };
  });
  await (await database.raw()).transaction(statements);
}
