// Scale-out on PostgreSQL (part of `npm run bench`; alone: `--only=cluster --providers=postgres`): events end to end
// through a cluster of 1, 2 and 3 members (the client spreads batches over the members, no load balancer), the CPU
// each member used, the most partitions of the tenant one of 3 members holds, counts and where-is-user p99 on a
// member that owns only some partitions, and how long partitions take to settle on live members after a SIGKILL, a
// join and a SIGTERM, while a client keeps posting events: every event a member acknowledged must be applied. On one
// 2-core machine every member competes for the same cores, so the throughput shows the cluster's overhead more than
// its speed-up.
import { BENCH_ADMIN_TOKEN, startServer, type BenchServer } from '../lib/server';
import type { ScratchDatabase } from '../lib/database';
import { measureGets, type Latency } from '../lib/latency';
import { postgresCpuMs } from '../lib/proc';
import { CEILING_IN_FLIGHT, counters, describeLevel, measureCeiling, type CeilingFigures } from './cluster-ceiling';
import { inWindow } from '../lib/windows';
import { median, percentile, type Figure, type ScenarioResult, type Target } from '../lib/report';

const PARTITIONS = 8;
const BATCH = 1_000;
const IN_FLIGHT = 4;
/** Batches each member takes in the warm-up round before a phase is measured. */
const WARMUP_BATCHES_PER_MEMBER = 10;
/** Events posted per batch while partitions move (each to a user still waiting, so each must move exactly once). */
const HANDOFF_BATCH = 50;
/** Users set aside for the events posted while partitions move. */
const HANDOFF_USERS = 50_000;
/** The tenants the second growing load is spread over (the first is one tenant's): each tenant's journal writers are serialized apart. */
const CEILING_TENANTS = ['bench', 'bench-b', 'bench-c', 'bench-d'];

export interface ClusterFigures {
  eventsPerSecond: Record<string, number>;
  cpuMsPerMember: Record<string, number[]>;
  /** CPU of each member in the warm-up round before the phase (a member that just joined pays its one-time costs there). */
  warmupCpuMsPerMember: Record<string, number[]>;
  /** CPU of the whole local PostgreSQL server over each phase (every postgres process; null when it runs elsewhere). */
  postgresCpuMs: Record<string, number | null>;
  /** Events of each phase per second of CPU: the members' CPU added up, plus PostgreSQL's (null without it). */
  eventsPerCpuSecond: Record<string, number | null>;
  /** Per 1,000 events of each phase: PostgreSQL's write transactions and WAL bytes. */
  perThousandEvents: Record<string, { writes: number; walBytes: number }>;
  countsNonOwner: { p50Ms: number; p99Ms: number };
  whereIsUserNonOwner: { p50Ms: number; p99Ms: number };
  /** With 3 members and 8 partitions, once stable: the most partitions of the tenant one member holds. */
  maxPartitionsPerMember: number;
  settleMs: { sigkill: number; join: number; sigterm: number };
  /** 3 members at growing load until events/s stop growing (./cluster-ceiling.ts): one tenant's events, then CEILING_TENANTS'. */
  ceiling?: CeilingFigures;
  ceilingTenants?: CeilingFigures;
  /** Events acknowledged (202) while partitions moved (SIGKILL, join, SIGTERM), and how many of them were not applied. */
  handoffEvents: { acknowledged: number; unapplied: number };
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
    signal: AbortSignal.timeout(30_000),
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

export async function measureCluster(database: ScratchDatabase, options: { users: number; events: number; profile?: boolean }): Promise<ClusterFigures> {
  const members: Member[] = [];
  const join = async () => {
    const server = await startServer(database.url, { profile: options.profile });
    const member = { server, name: `${(await import('node:os')).hostname()}:${server.pid}` };
    members.push(member);
    return member;
  };
  const ownedBy = async (tenantId: string) => {
    const rows = await database.query<{ owner: string | null }>('SELECT "owner" FROM "PartitionState" WHERE "tenantId" = $1', [tenantId]);
    const held: Record<string, number> = {};
    for (const { owner } of rows) if (owner) held[owner] = (held[owner] ?? 0) + 1;
    return held;
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
    const perPhase = Math.min(options.events, Math.floor(options.users / 3));
    const users = perPhase * 3 + 6 * WARMUP_BATCHES_PER_MEMBER * BATCH + 2 * perPhase * CEILING_IN_FLIGHT.length + HANDOFF_USERS;
    const ids = Array.from({ length: users }, (_, i) => i + 1).join('\n');
    /** A tenant whose every user waits in a running instance for a purchase; its id and the instance's. */
    const buyers = async (name: string) => {
      const tenant = await json(first, 'POST', '/tenants', { name, partitions: PARTITIONS });
      await json(first, 'PUT', `/tenants/${name}/crowds/all`, ids, { 'content-type': 'text/plain' });
      const workflow = await json(first, 'POST', `/tenants/${name}/workflows`, {
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
      const started = await json(first, 'POST', `/tenants/${name}/workflows/${workflow.body.id}/start`, { crowd: 'all' });
      const instanceId: string = started.body.instanceId;
      await until('the instance running', async () => (await json(first, 'GET', `/tenants/${name}/instances/${instanceId}`)).body.state === 'running');
      return { name, tenantId: tenant.body.id as string, instanceId };
    };
    const { tenantId, instanceId } = await buyers('bench');

    const figures: ClusterFigures = {
      eventsPerSecond: {},
      cpuMsPerMember: {},
      warmupCpuMsPerMember: {},
      postgresCpuMs: {},
      eventsPerCpuSecond: {},
      perThousandEvents: {},
      countsNonOwner: { p50Ms: 0, p99Ms: 0 },
      whereIsUserNonOwner: { p50Ms: 0, p99Ms: 0 },
      maxPartitionsPerMember: 0,
      settleMs: { sigkill: 0, join: 0, sigterm: 0 },
      handoffEvents: { acknowledged: 0, unapplied: 0 },
    };
    let bought = 0;
    const purchasesFrom = (from: number, count: number) => {
      const batches: { user: number; type: string }[][] = [];
      for (let at = 0; at < count; at += BATCH)
        batches.push(Array.from({ length: Math.min(BATCH, count - at) }, (_, i) => ({ user: from + at + i, type: 'purchase' })));
      return batches;
    };
    /** Posts the batches, IN_FLIGHT at a time, spread over the members, then waits until every purchase is counted. */
    const purchase = async (batches: { user: number; type: string }[][]) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let b = next++; b < batches.length; b = next++) {
            const reply = await json(members[b % members.length], 'POST', '/events', { tenant: 'bench', events: batches[b] });
            if (reply.status !== 202) throw new Error(`events: ${reply.status} ${JSON.stringify(reply.body)}`);
          }
        }),
      );
      bought += batches.reduce((sum, batch) => sum + batch.length, 0);
      await until('every event applied', async () => {
        const counts = await json(members[0], 'GET', `/tenants/bench/instances/${instanceId}/counts`);
        return counts.status === 200 && counts.body.steps.bought >= bought;
      });
    };
    for (let size = 1; size <= 3; size++) {
      while (members.length < size) await join();
      await until('balanced ownership', balanced(tenantId));
      const phase = `${size} member${size > 1 ? 's' : ''}`;
      // A member that just joined pays once for what the running ones did before: loading the routes' modules, V8
      // optimizing the hot code, loading its tenant and its partitions' shards (in the runs up to session 21 it used
      // about twice the CPU of the others in its first phase). A round through every member first keeps that one-time
      // cost out of the per-event figures; its CPU is shown apart.
      const warmBefore = members.map((m) => m.server.cpuMs());
      await purchase(purchasesFrom(bought + 1, WARMUP_BATCHES_PER_MEMBER * size * BATCH));
      figures.warmupCpuMsPerMember[phase] = members.map((m, i) => Math.round(m.server.cpuMs() - warmBefore[i]));
      const batches = purchasesFrom(bought + 1, perPhase);
      const cpuBefore = members.map((m) => m.server.cpuMs());
      const pgBefore = postgresCpuMs();
      const countersBefore = await counters(database);
      const phaseStarted = performance.now();
      await inWindow(`cluster: events through ${phase}`, () => purchase(batches));
      const seconds = (performance.now() - phaseStarted) / 1000;
      figures.eventsPerSecond[phase] = Math.round(perPhase / seconds);
      figures.cpuMsPerMember[phase] = members.map((m, i) => Math.round(m.server.cpuMs() - cpuBefore[i]));
      const pgAfter = postgresCpuMs();
      const countersAfter = await counters(database);
      const perThousand = (n: number) => Math.round((10_000 * n) / perPhase) / 10;
      figures.perThousandEvents[phase] = {
        writes: perThousand(countersAfter.writes - countersBefore.writes),
        walBytes: Math.round(perThousand(Number(countersAfter.wal - countersBefore.wal))),
      };
      const pgMs = pgBefore === undefined || pgAfter === undefined ? null : pgAfter - pgBefore;
      figures.postgresCpuMs[phase] = pgMs;
      const membersMs = figures.cpuMsPerMember[phase].reduce((sum, ms) => sum + ms, 0);
      figures.eventsPerCpuSecond[phase] = pgMs === null ? null : Math.round(perPhase / ((membersMs + pgMs) / 1000));
      const rate = Math.round(perPhase / seconds).toLocaleString('en-US');
      console.log(
        `  ${size} member(s): ${rate} events/s end to end; CPU ms per member ${figures.cpuMsPerMember[phase].join(', ')}, PostgreSQL ` +
          `${pgMs ?? 'n/a'}; ${figures.eventsPerCpuSecond[phase]?.toLocaleString('en-US') ?? 'n/a'} events per CPU-second; per 1,000 events ` +
          `${figures.perThousandEvents[phase].writes} write transactions, ${figures.perThousandEvents[phase].walBytes.toLocaleString('en-US')} WAL bytes ` +
          `(warm-up round before it: CPU ms per member ${figures.warmupCpuMsPerMember[phase].join(', ')})`,
      );
    }
    // Its users are set aside whatever happens; a failure leaves the section's other figures standing.
    figures.ceiling = await measureCeiling(
      database,
      members.map((m) => m.server),
      {
        firstUser: bought + 1,
        eventsPerLevel: perPhase,
        batch: BATCH,
        post: async (member, events) => {
          const reply = await json(members[member], 'POST', '/events', { tenant: 'bench', events });
          if (reply.status !== 202) throw new Error(`events: ${reply.status} ${JSON.stringify(reply.body)}`);
        },
        applied: async (count) =>
          void (await until('every event applied', async () => {
            const counts = await json(members[0], 'GET', `/tenants/bench/instances/${instanceId}/counts`);
            return counts.status === 200 && counts.body.steps.bought >= bought + count;
          })),
      },
    ).catch((error: Error) => void console.log(`  ! the cluster's growing load failed: ${error.stack ?? error}`));
    bought += perPhase * CEILING_IN_FLIGHT.length;
    // The same growing load spread over CEILING_TENANTS, a batch each in turn: what one tenant's serialized journal
    // commits left of PostgreSQL's room.
    const spread = [{ name: 'bench', tenantId, instanceId }];
    for (const name of CEILING_TENANTS.slice(1)) spread.push(await buyers(name));
    for (const other of spread) await until('balanced ownership', balanced(other.tenantId));
    const boughtOver = async (tenants: typeof spread) => {
      let sum = 0;
      for (const t of tenants) sum += (await json(members[0], 'GET', `/tenants/${t.name}/instances/${t.instanceId}/counts`)).body.steps?.bought ?? 0;
      return sum;
    };
    const spreadFrom = bought + 1;
    const boughtBefore = await boughtOver(spread);
    figures.ceilingTenants = await measureCeiling(
      database,
      members.map((m) => m.server),
      {
        firstUser: spreadFrom,
        eventsPerLevel: perPhase,
        batch: BATCH,
        post: async (member, events) => {
          const tenant = spread[Math.floor((events[0].user - spreadFrom) / BATCH) % spread.length].name;
          const reply = await json(members[member], 'POST', '/events', { tenant, events });
          if (reply.status !== 202) throw new Error(`events: ${reply.status} ${JSON.stringify(reply.body)}`);
        },
        applied: async (count) => void (await until('every event applied', async () => (await boughtOver(spread)) >= boughtBefore + count)),
      },
    ).catch((error: Error) => void console.log(`  ! the cluster's growing load over ${spread.length} tenants failed: ${error.stack ?? error}`));
    bought += perPhase * CEILING_IN_FLIGHT.length;
    figures.maxPartitionsPerMember = Math.max(...Object.values(await ownedBy(tenantId)));
    const nonOwner = members[1].server.baseUrl;
    const auth = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` };
    figures.countsNonOwner = await measureGets(nonOwner, `/api/v1/tenants/bench/instances/${instanceId}/counts`, auth, 1_000);
    console.log(
      `  counts on a member owning ${(await ownedBy(tenantId))[members[1].name] ?? 0} of 8 partitions: p50 ` +
        `${figures.countsNonOwner.p50Ms.toFixed(2)} ms, p99 ${figures.countsNonOwner.p99Ms.toFixed(2)} ms`,
    );
    // Users of every partition in turn, so most lookups read a partition another member holds.
    let lookup = 0;
    figures.whereIsUserNonOwner = await measureEach(members[1], () => `/tenants/bench/users/${1 + (lookup++ % users)}`, 300);
    console.log(
      `  where-is-user on that member: p50 ${figures.whereIsUserNonOwner.p50Ms.toFixed(2)} ms, p99 ` +
        `${figures.whereIsUserNonOwner.p99Ms.toFixed(2)} ms; most partitions on one of 3 members: ${figures.maxPartitionsPerMember}`,
    );

    // While partitions move, a client keeps posting purchases of waiting users to every live member: each batch a
    // member acknowledged must end up applied (its users in `bought`), whichever member held the partition then.
    const acknowledged: number[] = [];
    let nextUser = bought + 1;
    let posting = true;
    /** The members the client posts to: a member leaving by SIGTERM stays in until its process ended. */
    const targets = [...members];
    const poster = (async () => {
      for (let round = 0; posting && nextUser + HANDOFF_BATCH <= users; round++) {
        const batch = Array.from({ length: HANDOFF_BATCH }, (_, i) => nextUser + i);
        nextUser += HANDOFF_BATCH;
        const member = targets[round % targets.length];
        const reply = await json(member, 'POST', '/events', { tenant: 'bench', events: batch.map((user) => ({ user, type: 'purchase' })) }).catch(() => null);
        if (reply?.status === 202) acknowledged.push(...batch);
        else await new Promise((r) => setTimeout(r, 20)); // a member going away: the next batch goes to another
      }
    })();

    const victim = members.splice(2, 1)[0];
    targets.splice(targets.indexOf(victim), 1);
    process.kill(victim.server.pid, 'SIGKILL');
    figures.settleMs.sigkill = await until('takeover after SIGKILL', balanced(tenantId));
    targets.push(await join());
    figures.settleMs.join = await until('handoff to a joining member', balanced(tenantId));
    const leaving = members.splice(1, 1)[0];
    const stopping = leaving.server.stop();
    figures.settleMs.sigterm = await until('handoff after SIGTERM', balanced(tenantId));
    await stopping;
    targets.splice(targets.indexOf(leaving), 1);
    posting = false;
    await poster;
    console.log(
      `  partitions settled on live members: ${Math.round(figures.settleMs.sigkill)} ms after a SIGKILL, ` +
        `${Math.round(figures.settleMs.join)} ms after a join (from ready), ${Math.round(figures.settleMs.sigterm)} ms after a SIGTERM`,
    );
    figures.handoffEvents = { acknowledged: acknowledged.length, unapplied: await unapplied(members[0], instanceId, acknowledged) };
    console.log(`  events acknowledged while partitions moved: ${acknowledged.length}, not applied: ${figures.handoffEvents.unapplied}`);
    return figures;
  } finally {
    await Promise.all(members.map((m) => m.server.stop().catch(() => undefined)));
  }
}

/** Sequential GETs of a changing path after 10 warm-up ones (fetch: its own tail of a few ms is in the figure). */
async function measureEach(member: Member, path: () => string, reads: number): Promise<Latency> {
  const samples: number[] = [];
  for (let i = 0; i < reads + 10; i++) {
    const started = performance.now();
    const reply = await json(member, 'GET', path());
    if (reply.status !== 200) throw new Error(`GET ${path()}: ${reply.status} ${JSON.stringify(reply.body)}`);
    if (i >= 10) samples.push(performance.now() - started);
  }
  return { p50Ms: median(samples), p99Ms: percentile(samples, 99) };
}

/** How many of the acknowledged users are not in `bought` once the members are done (waits up to 20 s for them). */
async function unapplied(member: Member, instanceId: string, acknowledged: number[]): Promise<number> {
  let missing = acknowledged.length;
  const deadline = performance.now() + 20_000;
  while (performance.now() < deadline) {
    const reply = await json(member, 'GET', `/tenants/bench/instances/${instanceId}/steps/bought/export?format=csv`);
    if (reply.status === 200) {
      const bought = new Set(String(reply.body).split('\n').filter(Boolean).map(Number));
      missing = acknowledged.filter((user) => !bought.has(user)).length;
      if (missing === 0) return 0;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return missing;
}

/** The cluster's rows in the results table (issue 17's targets; throughput and latencies are reported, not judged). */
export function clusterRows(f: ClusterFigures): ScenarioResult[] {
  const provider = 'postgres';
  const ms = (value: number, note?: string): Figure => ({ value: Math.round(value), unit: 'ms', ...(note ? { note } : {}) });
  const lower = (value: number, text: string): Target => ({ value, direction: 'lower', text });
  const rows: ScenarioResult[] = [
    { scenario: 'cluster: partitions taken over after a SIGKILL of a member', provider, ours: ms(f.settleMs.sigkill), target: lower(2_000, '≤ 2 s') },
    { scenario: 'cluster: planned handoff when a member leaves (SIGTERM)', provider, ours: ms(f.settleMs.sigterm), target: lower(1_000, '≤ 1 s') },
    { scenario: 'cluster: planned handoff to a joining member (from its first answer)', provider, ours: ms(f.settleMs.join), target: lower(1_000, '≤ 1 s') },
    {
      scenario: 'cluster: acknowledged events left unapplied after the SIGKILL, join and SIGTERM',
      provider,
      ours: { value: f.handoffEvents.unapplied, unit: 'events', note: `(of ${f.handoffEvents.acknowledged} acknowledged meanwhile)` },
      target: lower(0, '0'),
    },
    {
      scenario: 'cluster: most partitions of a tenant on one member, 3 members × 8 partitions',
      provider,
      ours: { value: f.maxPartitionsPerMember, unit: 'partitions' },
      target: lower(3, '≤ 3'),
    },
    {
      scenario: 'cluster: counts on a member not holding every partition (p99)',
      provider,
      ours: ms(f.countsNonOwner.p99Ms, `(p50 ${f.countsNonOwner.p50Ms.toFixed(1)})`),
    },
    {
      scenario: 'cluster: where-is-user on a member not holding every partition (p99)',
      provider,
      ours: ms(f.whereIsUserNonOwner.p99Ms, `(p50 ${f.whereIsUserNonOwner.p50Ms.toFixed(1)})`),
    },
  ];
  for (const [members, perSecond] of Object.entries(f.eventsPerSecond)) {
    rows.push({
      scenario: `cluster: events end to end through ${members} on one machine (overhead, not speed-up)`,
      provider,
      ours: { value: perSecond, unit: 'events/s', note: `(CPU ms per member ${f.cpuMsPerMember[members]?.join(', ')})` },
    });
  }
  // Issue 39 §4: on one machine members cannot add speed, but they should not add cost per event.
  const one = f.eventsPerCpuSecond['1 member'] ?? null;
  for (const [members, perCpuSecond] of Object.entries(f.eventsPerCpuSecond)) {
    const judged = members === '3 members' && one !== null;
    rows.push({
      scenario: `cluster: events per CPU-second through ${members} (members' CPU added up + PostgreSQL's)`,
      provider,
      ours: {
        value: perCpuSecond,
        unit: 'events/CPU-s',
        note: `(PostgreSQL ${f.postgresCpuMs[members] ?? 'n/a'} ms of CPU; the warm-up round before: ${f.warmupCpuMsPerMember[members]?.join(', ')} ms per member)`,
      },
      ...(judged ? { target: { value: Math.round(0.8 * one), direction: 'higher' as const, text: `≥ 0.8× one member's (${Math.round(0.8 * one)})` } } : {}),
    });
  }
  for (const [ceiling, over] of [
    [f.ceiling, ''],
    [f.ceilingTenants, `of ${CEILING_TENANTS.length} tenants `],
  ] as const) {
    if (!ceiling) continue;
    const top = ceiling.levels.reduce((best, level) => (level.eventsPerSecond > best.eventsPerSecond ? level : best));
    rows.push({
      scenario: `cluster: events/s ${over}through 3 members at growing load (batches in flight ${CEILING_IN_FLIGHT.join('/')}), the most`,
      provider,
      ours: { value: top.eventsPerSecond, unit: 'events/s', note: `(at ${top.inFlight} in flight; saturating: ${ceiling.saturating})` },
      details: { levels: ceiling.levels.map((level) => `${level.inFlight} in flight: ${describeLevel(level)}`) },
    });
  }
  return rows;
}
