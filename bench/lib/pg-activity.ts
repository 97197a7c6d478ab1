// What the PostgreSQL backends serving a bench server do: their pids (for their CPU from /proc) and, sampled from
// pg_stat_activity, their states while something slow runs. Empty on SQLite.
import type { ScratchDatabase } from './database';
import { connectionPorts } from './proc';
import type { BenchServer } from './server';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** PostgreSQL backends serving the server's connections now (by the client ports of its sockets). */
export async function backendsOf(database: ScratchDatabase, server: BenchServer): Promise<number[]> {
  if (database.provider !== 'postgres') return [];
  const ports = connectionPorts(server.pid, Number(new URL(database.url).port || 5432));
  if (ports.length === 0) return [];
  const rows = await database.query<{ pid: number }>(`SELECT "pid" FROM pg_stat_activity WHERE "client_port" IN (${ports.join(', ')})`);
  return rows.map((r) => r.pid);
}

/**
 * PostgreSQL: samples what the server's backends do from `boundary` until stopped (state, wait event, statement),
 * so a slow firing shows whether the time goes in PostgreSQL (active, waiting) or in the server (idle in transaction).
 */
export function watchActivity(database: ScratchDatabase, server: BenchServer, boundary: number) {
  const seen = new Map<string, number>();
  let samples = 0;
  let running = database.provider === 'postgres';
  const sampling = (async () => {
    await sleep(boundary - Date.now());
    while (running) {
      const ports = connectionPorts(server.pid, Number(new URL(database.url).port || 5432));
      const rows = ports.length
        ? await database.query<{ what: string }>(
            `SELECT "state" || COALESCE(' ' || "wait_event_type" || ':' || "wait_event", '') || CASE WHEN "state" = 'active' THEN ' ' || left(regexp_replace("query", '\\s+', ' ', 'g'), 48) ELSE '' END AS "what"
             FROM pg_stat_activity WHERE "client_port" IN (${ports.join(', ')}) AND "state" <> 'idle'`,
          )
        : [];
      samples++;
      for (const { what } of rows) seen.set(what, (seen.get(what) ?? 0) + 1);
      await sleep(20);
    }
  })();
  return {
    async stop(): Promise<string | undefined> {
      running = false;
      await sampling;
      if (samples === 0) return undefined;
      const top = [...seen].sort((a, b) => b[1] - a[1]).slice(0, 5);
      return `${samples} samples; busy backends per sample: ${top.map(([what, n]) => `${(n / samples).toFixed(2)} ${what}`).join(' | ') || 'none'}`;
    },
  };
}
