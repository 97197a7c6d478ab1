// Exactly-once ingest costs little: events end to end over HTTP (sent → every move in the counts) with an
// Idempotency-Key on every batch and an `id` on every event, against the same events without either. Each run gets
// its own tenant and instance on one server. A first pair warms the server up and is not counted; then the two kinds
// alternate in pairs (ABBA…), and the figure is the lower middle of the pairs' ratios (`median` of an even count): a
// pair runs back to back, so VM drift hits both of it alike, and the middle drops the pairs a stall landed in
// (best-of-2 over 2.5 s runs varied ±20%).
import { randomUUID } from 'node:crypto';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { BRANCH_JOURNEY, expectedMoves, journeyEvents, type BenchEvent } from '../lib/data';
import type { ScratchDatabase } from '../lib/database';
import { formatNumber, median, progress } from '../lib/report';
import { BENCH_ADMIN_TOKEN, call, startServer, type BenchServer } from '../lib/server';
import { inWindow } from '../lib/windows';
import type { Measured } from './journey';

const PARTITIONS = 8;
const EVENT_BATCH = 1_000;
const IN_FLIGHT = 4;
const ROUNDS = 6;

export type IngestFigures = { plain: Measured; keyed: Measured; ratio: Measured };

type Kind = 'plain' | 'keyed';

export async function measureIngest(database: ScratchDatabase, options: { users: number; events: number; profile: boolean }): Promise<IngestFigures> {
  const server = await startServer(database.url, { profile: options.profile });
  try {
    const events = journeyEvents(options.events, options.users, 13);
    const rates: Record<Kind, number[]> = { plain: [], keyed: [] };
    const ratios: number[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const warmUp = round === 0;
      const pair: Partial<Record<Kind, number>> = {};
      for (const kind of round % 2 === 0 ? (['plain', 'keyed'] as const) : (['keyed', 'plain'] as const)) {
        const label = `ingest on ${database.provider}: ${kind} ${warmUp ? 'warm-up' : `run ${round}`}`;
        // A window per run: --profile then shows what the keyed runs cost beyond the plain ones, thread by thread.
        pair[kind] = await inWindow(label, () => runOnce(server, `${kind}${round}`, kind, events, options.users, label));
        console.log(`  ${label}: ${formatNumber(pair[kind])} events/s`);
      }
      if (warmUp) continue;
      rates.plain.push(pair.plain!);
      rates.keyed.push(pair.keyed!);
      ratios.push(pair.keyed! / pair.plain!);
    }
    const details = { events: options.events, batch: EVENT_BATCH, inFlight: IN_FLIGHT, runs: rates, ratios };
    const ratio = median(ratios);
    return {
      plain: { value: median(rates.plain), details },
      keyed: { value: median(rates.keyed), details },
      ratio: {
        value: 100 * ratio,
        note: `(lower middle of ${ROUNDS} back-to-back pairs, ${ratios.map((r) => `${Math.round(100 * r)}%`).join(' ')}; medians ${formatNumber(median(rates.keyed))} vs ${formatNumber(median(rates.plain))} events/s)`,
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

  // Bodies as bytes, built before the clock starts: the client shares the machine's two cores with the server, and
  // encoding each body to UTF-8 at every send took its CPU from the server (more for the larger keyed bodies).
  const bodies: { body: Uint8Array<ArrayBuffer>; key?: string }[] = [];
  const utf8 = new TextEncoder();
  for (let offset = 0; offset < events.length; offset += EVENT_BATCH) {
    const slice = events.slice(offset, offset + EVENT_BATCH);
    bodies.push(
      kind === 'plain'
        ? { body: utf8.encode(JSON.stringify({ tenant, events: slice })) }
        : // Ids as integrations generate them (Segment's messageId, RudderStack's): UUIDs.
          { body: utf8.encode(JSON.stringify({ tenant, events: slice.map((event) => ({ id: randomUUID(), ...event })) })), key: `batch-${offset}` },
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
async function postRetrying(url: string, headers: Record<string, string>, body: Uint8Array<ArrayBuffer>): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { method: 'POST', headers, body });
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}
