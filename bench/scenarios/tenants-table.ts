// The tenants section's rows in the bench table (bench/scenarios/tenants.ts measures them).
import type { Provider } from '../lib/database';
import { median, type ScenarioResult } from '../lib/report';
import { FIRING_WATCH_MS, type Firing, type TenantFigures, type TenantLevel } from './tenants';

/** The table's rows: the issue's targets (idle CPU and boot at 1,000 tenants, every level's timers within 2 s). */
export function tenantRows(figures: TenantFigures, provider: Provider): ScenarioResult[] {
  const where = `http-${provider}` as const;
  const rows: ScenarioResult[] = [];
  const lower = (value: number, text: string) => ({ value, direction: 'lower' as const, text });
  const firing = (f: Firing, sweep?: number) =>
    f.lastMs === null
      ? { value: null, unit: 'ms', note: `${f.fired} of ${f.due} due fired within ${FIRING_WATCH_MS / 1000} s` }
      : { value: f.lastMs, unit: 'ms', note: `(p50 ${f.p50Ms} of ${f.due} due${sweep === undefined ? '' : `; one sweep of all ${sweep.toFixed(0)} ms`})` };
  const first = figures.levels[0];
  const perTenant = (l: TenantLevel) =>
    l === first
      ? 'the first level'
      : `+${((l.rssBytes - first.rssBytes) / (l.tenants - first.tenants) / 1024).toFixed(0)} KiB per tenant since ${first.tenants}`;
  for (const l of figures.levels) {
    const n = l.tenants.toLocaleString('en-US');
    const at1000 = l.tenants >= 1_000;
    const pg = l.postgresCpuPercent === undefined ? '' : `; PostgreSQL backends ${l.postgresCpuPercent.toFixed(1)}%`;
    rows.push(
      {
        scenario: `tenants: idle server CPU, ${n} tenants × a 10,000-user instance moved by a timer each minute (% of a core over ${(l.windowMs / 1000).toFixed(0)} s)`,
        provider: where,
        ours: { value: l.idleCpuPercent, unit: '%', note: `(between firings ${l.idleCpuBetweenFiringsPercent.toFixed(1)}%${pg})` },
        ...(at1000 ? { target: lower(5, '≤ 5% at 1,000') } : {}),
        details: { busiestThreads: l.busiestThreads, firingInWindow: l.firingIdle, cpuPerSecond: l.cpuPerSecond },
      },
      {
        scenario: `tenants: all due timers of a minute committed (last tenant after :00), ${n} tenants`,
        provider: where,
        ours: firing(l.firingCommitted),
        target: lower(2_000, '≤ 2 s'),
        details: { idleWindowMinute: l.firingIdle },
      },
      {
        scenario: `tenants: the same firing visible in every tenant's counts (API sweep), ${n} tenants`,
        provider: where,
        ours: firing(l.firingVisible, l.firingVisible.sweepMs),
      },
      {
        scenario: `tenants: restart with ${n} tenants (SIGTERM, then spawn → first answered count)`,
        provider: where,
        ours: {
          value: l.restart.firstCountMs,
          unit: 'ms',
          note: `(listening ${l.restart.listenMs.toFixed(0)}; every tenant's count ${l.restart.allCountsMs.toFixed(0)}; stop ${l.restart.stopMs.toFixed(0)})`,
        },
        ...(at1000 ? { target: lower(5_000, '≤ 5 s at 1,000') } : {}),
      },
      {
        scenario: `tenants: start → counted of a 10,000-user instance among ${n} tenants (median of ${l.startToCountedMs.length})`,
        provider: where,
        ours: { value: median(l.startToCountedMs), unit: 'ms', note: `(max ${Math.max(...l.startToCountedMs).toFixed(0)})` },
      },
      {
        scenario: `tenants: server RSS with ${n} tenants (informational; flat per tenant is the aim)`,
        provider: where,
        ours: {
          value: l.rssBytes / 2 ** 20,
          unit: 'MiB',
          note: `(${perTenant(l)}; setup ${(l.setupMs / 1000).toFixed(0)} s, ${l.setupRetries} requests retried after a 503, ${l.failedStarts} failed starts redone)`,
        },
      },
    );
  }
  if (figures.error) rows.push({ scenario: `tenants: not measured (${figures.error})`, provider: where, ours: { value: null, unit: '', note: 'failed' } });
  return rows;
}
