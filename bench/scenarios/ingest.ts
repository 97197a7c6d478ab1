// Exactly-once ingest costs little: events end to end over HTTP (sent → every move in the counts) with an
// Idempotency-Key on every batch and an `id` on every event, against the same events without either. Each run gets
// its own tenant and instance on one server, and the two kinds alternate so warm-up and VM drift hit both alike.
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { BRANCH_JOURNEY, expectedMoves, journeyEvents, type BenchEvent } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { formatNumber, progress } from '../lib/report';
import { BENCH_ADMIN_TOKEN, call, startServer, type BenchServer } from '../lib/server';
import { inWindow } from '../lib/windows';
import type { Measured } from './journey';

const PARTITIONS = 8;
const EVENT_BATCH = 1_000;
const IN_FLIGHT = 4;
const ROUNDS = 2;

export type IngestFigures = { plain: Measured; keyed: Measured; ratio: Measured };

type Kind = 'plain' | 'keyed';

export async function measureIngest(database: ScratchDatabase, options: { users: number; events: number; profile: boolean }): Promise<IngestFigures> {
  const server = await startServer(database.url, { profile: options.profile });
  try {
    const events = journeyEvents(options.events, options.users, 13);
    const rates: Record<Kind, number[]> = { plain: [], keyed: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of round % 2 === 0 ? (['plain', 'keyed'] as const) : (['keyed', 'plain'] as const)) {
        const label = `ingest on ${database.provider}: ${kind} run ${round + 1}`;
        // A window per run: --profile then shows what the keyed runs cost beyond the plain ones, thread by thread.
        const rate = await inWindow(label, () => runOnce(server, `${kind}${round}`, kind, events, options.users, label));
        rates[kind].push(rate);
        console.log(`  ingest on ${database.provider}: ${kind} ${formatNumber(rate)} events/s`);
      }
    }
    const best = (kind: Kind) => Math.max(...rates[kind]);
    const details = { events: options.events, batch: EVENT_BATCH, inFlight: IN_FLIGHT, runs: rates };
    return {
      plain: { value: best('plain'), details },
      keyed: { value: best('keyed'), details },
      ratio: {
        value: (100 * best('keyed')) / best('plain'),
        note: `(${formatNumber(best('keyed'))} vs ${formatNumber(best('plain'))} events/s, best of ${ROUNDS})`,
        details,
      },
    };
  } finally {
    await server.stop();
  }
}

/** A tenant with a running branch instance over `users`, then the events: sent → counts show every move. */
async function runOnce(server: BenchServer, tenant: string, kind: Kind, events: BenchEvent[], users: number, label: string): Promise<number> {
  await call(server, 'POST', '/tenants', { name: tenant, partitions: PARTITIONS });
  const crowd = new RoaringBitmap32();
  crowd.addRange(0, users);
  await call(server, 'PUT', `/tenants/${tenant}/crowds/all`, Buffer.from(crowd.serialize('portable')), 'application/octet-stream');
  const { id: workflowId } = await call<{ id: string }>(server, 'POST', `/tenants/${tenant}/workflows`, { name: 'branch', definition: BRANCH_JOURNEY });
  const { instanceId } = await call<{ instanceId: string }>(server, 'POST', `/tenants/${tenant}/workflows/${workflowId}/start`, { crowd: 'all' });
  for (;;) {
    const instance = await call<{ state: string }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}`);
    if (instance.state === 'running') break;
    if (instance.state === 'failed') throw new Error(`instance ${instanceId} failed`);
    await new Promise((r) => setTimeout(r, 10));
  }

  const bodies: { body: string; key?: string }[] = [];
  for (let offset = 0; offset < events.length; offset += EVENT_BATCH) {
    const slice = events.slice(offset, offset + EVENT_BATCH);
    bodies.push(
      kind === 'plain'
        ? { body: JSON.stringify({ tenant, events: slice }) }
        : { body: JSON.stringify({ tenant, events: slice.map((event, i) => ({ id: `evt-${offset + i}`, ...event })) }), key: `batch-${offset}` },
    );
  }
  const expected = expectedMoves(events, users);
  const tick = progress(`${label}: events sent`);
  const started = performance.now();
  let next = 0;
  const sender = async () => {
    while (next < bodies.length) {
      const { body, key } = bodies[next++];
      const headers: Record<string, string> = {
        authorization: `Bearer ${BENCH_ADMIN_TOKEN}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      };
      const response = await postRetrying(`${server.baseUrl}/api/v1/events`, headers, body);
      const text = await response.text();
      if (response.status !== 202) throw new Error(`POST /events: ${response.status} ${text.slice(0, 200)}`);
      tick(next * EVENT_BATCH, events.length);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
  for (;;) {
    const counts = await call<{ steps: Record<string, number> }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`);
    // The total, not big and small apart: batches in flight together may reach the log in either order, and a
    // user's first purchase (big or small) decides.
    if ((counts.steps.big ?? 0) + (counts.steps.small ?? 0) === expected.big + expected.small) break;
    if (performance.now() - started > 600_000) throw new Error(`${label}: moves not all counted after 10 minutes`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return events.length / ((performance.now() - started) / 1000);
}

/**
 * POSTs a batch, sending it again when the connection failed before an answer (a kept-alive socket the loaded server
 * closed as it was reused: "fetch failed"). What every integration does; harmless here, since a resent batch moves
 * no user twice (each moves on its first purchase) and a keyed one is deduplicated.
 */
async function postRetrying(url: string, headers: Record<string, string>, body: string): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { method: 'POST', headers, body });
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}
