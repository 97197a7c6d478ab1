// Exports with profile columns and step → crowd (issue 38 §1, §3), over HTTP on a real server: N profiles of 3
// attributes (plan, age, tz) imported, an instance started over the N users, then the step exported with those
// columns as CSV and as Parquet (time to the last byte, and the server's peak RSS growth while it streamed, sampled
// every 10 ms from /proc), and the step saved as a new crowd (POST …/steps/{step}/crowd).
import { serializeBitmap } from '../../server/crowd';
import { denseBitmap } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { percentile } from '../lib/report';
import { BENCH_ADMIN_TOKEN, type BenchServer, call, download, startServer } from '../lib/server';
import type { Measured } from './journey';
import { profileStream } from './profiles';

export interface ExportFigures {
  csv: Measured;
  parquet: Measured;
  stepCrowd: Measured;
}

const COLUMNS = 'plan,age,tz';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `work` while sampling the server's RSS; the growth of its peak over the RSS before. */
async function withPeakRss<T>(server: BenchServer, work: () => Promise<T>): Promise<{ result: T; growthBytes: number }> {
  const before = server.rssBytes();
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, server.rssBytes());
      await sleep(10);
    }
  })();
  try {
    return { result: await work(), growthBytes: peak - before };
  } finally {
    sampling = false;
    await sampler;
  }
}

async function importProfiles(server: BenchServer, tenant: string, users: number): Promise<void> {
  const response = await fetch(`${server.baseUrl}/api/v1/tenants/${tenant}/profiles/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
    body: profileStream(users),
    duplex: 'half',
  } as RequestInit);
  if (!response.ok) throw new Error(`profile import: ${response.status} ${(await response.text()).slice(0, 300)}`);
  await response.arrayBuffer();
}

export async function measureExports(database: ScratchDatabase, users: number, profile = false): Promise<ExportFigures> {
  const server = await startServer(database.url, { profile });
  try {
    const tenant = 'exports';
    await call(server, 'POST', '/tenants', { name: tenant, partitions: 8 });
    console.log(`  importing ${users.toLocaleString('en-US')} profiles (plan, age, tz) over HTTP…`);
    const importStarted = performance.now();
    await importProfiles(server, tenant, users);
    console.log(`  imported in ${((performance.now() - importStarted) / 1000).toFixed(1)} s`);
    await call(server, 'PUT', `/tenants/${tenant}/crowds/everyone`, serializeBitmap(denseBitmap(users)), 'application/octet-stream');
    const definition = {
      steps: [
        { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "buy"', next: 'done' }] },
        { name: 'done', kind: 'direct' },
      ],
    };
    const workflow = await call(server, 'POST', `/tenants/${tenant}/workflows`, { name: 'exports', definition });
    const { instanceId } = await call(server, 'POST', `/tenants/${tenant}/workflows/${workflow.id}/start`, { crowd: 'everyone' });
    for (;;) {
      const counts = await call(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`).catch(() => undefined);
      if (counts?.steps?.wait === users) break;
      await sleep(50);
    }
    const step = `/tenants/${tenant}/instances/${instanceId}/steps/wait`;
    // The first export loads the export table thread and its WebAssembly: warmed on a few users.
    await download(server, `${step}/export?format=parquet&columns=${COLUMNS}&limit=1000`);
    await download(server, `${step}/export?format=csv&columns=${COLUMNS}&limit=1000`);
    const exported = async (format: 'csv' | 'parquet'): Promise<Measured> => {
      const { result, growthBytes } = await withPeakRss(server, () => download(server, `${step}/export?format=${format}&columns=${COLUMNS}`));
      const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
      return {
        value: result.ms,
        note: `(${mib(result.bytes)}; server peak RSS +${mib(growthBytes)})`,
        details: { bytes: result.bytes, peakRssGrowthBytes: growthBytes },
      };
    };
    const csv = await exported('csv');
    console.log(`  CSV with ${COLUMNS}: ${Math.round(csv.value ?? 0)} ms ${csv.note}`);
    const parquet = await exported('parquet');
    console.log(`  Parquet with ${COLUMNS}: ${Math.round(parquet.value ?? 0)} ms ${parquet.note}`);
    const times: number[] = [];
    for (let k = 0; k < 5; k++) {
      const started = performance.now();
      await call(server, 'POST', `${step}/crowd`, { name: `retarget-${k}` });
      times.push(performance.now() - started);
    }
    const stepCrowd = { value: percentile(times, 50), note: `(median of 5, max ${Math.round(Math.max(...times))} ms)` };
    console.log(`  step → crowd: ${Math.round(stepCrowd.value)} ms ${stepCrowd.note}`);
    return { csv, parquet, stepCrowd };
  } finally {
    await server.stop();
  }
}
