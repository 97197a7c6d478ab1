// Event-triggered entry over HTTP: a trigger-only instance (no start crowd) and `events` sign-up events of distinct
// users posted to /events in batches of 1,000 (4 in flight); the rate is entries per second from the first POST until
// the counts show every user entered. Half the events are of another type, so the trigger is picked out of a mix.
import type { ScratchDatabase } from '../lib/database';
import { formatNumber, progress } from '../lib/report';
import { BENCH_ADMIN_TOKEN, call, startServer } from '../lib/server';
import type { Measured } from './journey';

const PARTITIONS = 8;
const EVENT_BATCH = 1_000;
const IN_FLIGHT = 4;

export type EntryFigures = { entries: Measured };

const SIGNUP_JOURNEY = {
  steps: [
    { name: 'wait', kind: 'branch', branches: [{ condition: 'event.type == "purchase"', next: 'bought' }], timeout: { after: '7d', next: 'lapsed' } },
    { name: 'bought', kind: 'direct' },
    { name: 'lapsed', kind: 'direct' },
  ],
  entry: { event: 'signup' },
};

export async function measureEntry(database: ScratchDatabase, options: { users: number; profile: boolean }): Promise<EntryFigures> {
  const server = await startServer(database.url, { profile: options.profile });
  try {
    const tenant = 'entry';
    await call(server, 'POST', '/tenants', { name: tenant, partitions: PARTITIONS });
    const { id: workflowId } = await call<{ id: string }>(server, 'POST', `/tenants/${tenant}/workflows`, { name: 'signup', definition: SIGNUP_JOURNEY });
    const { instanceId } = await call<{ instanceId: string }>(server, 'POST', `/tenants/${tenant}/workflows/${workflowId}/start`, {});
    for (;;) {
      const instance = await call<{ state: string }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}`);
      if (instance.state === 'running') break;
      if (instance.state === 'failed') throw new Error(`instance ${instanceId} failed`);
      await new Promise((r) => setTimeout(r, 10));
    }

    // Each batch: 500 users signing up (in a shuffled order of users) and 500 page views of the same users.
    const bodies: string[] = [];
    const half = EVENT_BATCH / 2;
    for (let first = 0; first < options.users; first += half) {
      const users = Array.from({ length: Math.min(half, options.users - first) }, (_, i) => ((first + i) * 2_654_435_761) % 4_294_967_291);
      const events = users.flatMap((user) => [
        { user, type: 'view' },
        { user, type: 'signup' },
      ]);
      bodies.push(JSON.stringify({ tenant, events }));
    }
    const tick = progress('entry: events sent');
    const started = performance.now();
    let next = 0;
    const sender = async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const response = await fetch(`${server.baseUrl}/api/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body,
        });
        const text = await response.text();
        if (response.status !== 202) throw new Error(`POST /events: ${response.status} ${text.slice(0, 200)}`);
        tick(next * half, options.users);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
    for (;;) {
      const counts = await call<{ entered: number }>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`);
      if (counts.entered === options.users) break;
      if (performance.now() - started > 600_000) throw new Error(`entry: ${counts.entered} of ${options.users} entered after 10 minutes`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const rate = options.users / seconds;
    console.log(`  entry on ${database.provider}: ${formatNumber(rate)} entries/s (${formatNumber(options.users)} users in ${seconds.toFixed(1)} s)`);
    return { entries: { value: rate, details: { users: options.users, events: options.users * 2, batch: EVENT_BATCH, inFlight: IN_FLIGHT, seconds } } };
  } finally {
    await server.stop();
  }
}
