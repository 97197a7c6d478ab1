// Scale-out on PostgreSQL (`npm run bench -- --only=cluster --providers=postgres`): events end to end through a
// cluster of 1, 2 and 3 members (the client spreads batches over the members, no load balancer), the CPU each member
// used, counts p99 on a member that owns only some partitions, and how long partitions take to settle on live
// members after a SIGKILL, a join and a SIGTERM. On one 2-core machine every member competes for the same cores, so
// the throughput shows the cluster's overhead more than its speed-up.
import { BENCH_ADMIN_TOKEN, startServer, type BenchServer } from '../lib/server';
import type { ScratchDatabase } from '../lib/database';
import { measureGets } from '../lib/latency';

const PARTITIONS = 8;
const BATCH = 1_000;
const IN_FLIGHT = 4;

export interface ClusterFigures {
  eventsPerSecond: Record<string, number>;
  cpuMsPerMember: Record<string, number[]>;
  countsNonOwner: { p50Ms: number; p99Ms: number };
  settleMs: { sigkill: number; join: number; sigterm: number };
}

type Member = { server: BenchServer; name: string };

async function json(
  member: Member,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${member.server.baseUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, ...(typeof body === 'string' ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  while (!(await probe())) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - started;
}

export async function measureCluster(database: ScratchDatabase, options: { users: number; events: number }): Promise<ClusterFigures> {
  const members: Member[] = [];
  const join = async () => {
    const server = await startServer(database.url);
    const member = { server, name: `${(await import('node:os')).hostname()}:${server.pid}` };
    members.push(member);
    return member;
  };
  const balanced = (tenantId: string) => async () => {
    const rows = await database.query<{ owner: string | null }>('SELECT "owner" FROM "PartitionState" WHERE "tenantId" = $1', [tenantId]);
    const live = members.map((m) => m.name);
    const cap = Math.ceil(PARTITIONS / live.length);
    return (
      rows.length === PARTITIONS && rows.every((r) => r.owner && live.includes(r.owner)) && live.every((m) => rows.filter((r) => r.owner === m).length <= cap)
    );
  };
  try {
    const first = await join();
    const tenant = await json(first, 'POST', '/tenants', { name: 'bench', partitions: PARTITIONS });
    const tenantId: string = tenant.body.id;
    const perPhase = Math.min(options.events, Math.floor(options.users / 3));
    const users = perPhase * 3;
    const ids = Array.from({ length: users }, (_, i) => i + 1).join('\n');
    await json(first, 'PUT', '/tenants/bench/crowds/all', ids, { 'content-type': 'text/plain' });
    const workflow = await json(first, 'POST', '/tenants/bench/workflows', {
      name: 'buyers',
      definition: {
        steps: [
          {
            name: 'waiting',
            kind: 'branch',
            branches: [
              { condition: 'event.type == "purchase"', next: 'bought' },
              { condition: 'true', next: 'other' },
            ],
          },
          { name: 'bought', kind: 'direct' },
          { name: 'other', kind: 'direct' },
        ],
      },
    });
    const started = await json(first, 'POST', `/tenants/bench/workflows/${workflow.body.id}/start`, { crowd: 'all' });
    const instanceId: string = started.body.instanceId;
    await until('the instance running', async () => (await json(first, 'GET', `/tenants/bench/instances/${instanceId}`)).body.state === 'running');

    const figures: ClusterFigures = {
      eventsPerSecond: {},
      cpuMsPerMember: {},
      countsNonOwner: { p50Ms: 0, p99Ms: 0 },
      settleMs: { sigkill: 0, join: 0, sigterm: 0 },
    };
    let bought = 0;
    for (let size = 1; size <= 3; size++) {
      while (members.length < size) await join();
      await until('balanced ownership', balanced(tenantId));
      const from = bought + 1;
      const batches: { user: number; type: string }[][] = [];
      for (let at = 0; at < perPhase; at += BATCH)
        batches.push(Array.from({ length: Math.min(BATCH, perPhase - at) }, (_, i) => ({ user: from + at + i, type: 'purchase' })));
      const cpuBefore = members.map((m) => m.server.cpuMs());
      const phaseStarted = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let b = next++; b < batches.length; b = next++) {
            const reply = await json(members[b % members.length], 'POST', '/events', { tenant: 'bench', events: batches[b] });
            if (reply.status !== 202) throw new Error(`events: ${reply.status} ${JSON.stringify(reply.body)}`);
          }
        }),
      );
      bought += perPhase;
      await until('every event applied', async () => {
        const counts = await json(members[0], 'GET', `/tenants/bench/instances/${instanceId}/counts`);
        return counts.status === 200 && counts.body.steps.bought >= bought;
      });
      const seconds = (performance.now() - phaseStarted) / 1000;
      figures.eventsPerSecond[`${size} member${size > 1 ? 's' : ''}`] = Math.round(perPhase / seconds);
      figures.cpuMsPerMember[`${size} member${size > 1 ? 's' : ''}`] = members.map((m, i) => Math.round(m.server.cpuMs() - cpuBefore[i]));
      console.log(
        `  ${size} member(s): ${Math.round(perPhase / seconds).toLocaleString('en-US')} events/s end to end; CPU ms per member ${figures.cpuMsPerMember[`${size} member${size > 1 ? 's' : ''}`].join(', ')}`,
      );
    }
    figures.countsNonOwner = await measureGets(
      members[1].server.baseUrl,
      `/api/v1/tenants/bench/instances/${instanceId}/counts`,
      { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
      1_000,
    );
    console.log(
      `  counts on a member owning 3 of 8 partitions: p50 ${figures.countsNonOwner.p50Ms.toFixed(2)} ms, p99 ${figures.countsNonOwner.p99Ms.toFixed(2)} ms`,
    );

    const victim = members.splice(2, 1)[0];
    process.kill(victim.server.pid, 'SIGKILL');
    figures.settleMs.sigkill = await until('takeover after SIGKILL', balanced(tenantId));
    await join();
    figures.settleMs.join = await until('handoff to a joining member', balanced(tenantId));
    const leaving = members.splice(1, 1)[0];
    const stopping = leaving.server.stop();
    figures.settleMs.sigterm = await until('handoff after SIGTERM', balanced(tenantId));
    await stopping;
    console.log(
      `  partitions settled on live members: ${Math.round(figures.settleMs.sigkill)} ms after a SIGKILL, ${Math.round(figures.settleMs.join)} ms after a join (from ready), ${Math.round(figures.settleMs.sigterm)} ms after a SIGTERM`,
    );
    return figures;
  } finally {
    await Promise.all(members.map((m) => m.server.stop().catch(() => undefined)));
  }
}
