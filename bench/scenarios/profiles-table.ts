// The profile scenarios' rows in the results table (issue 14's targets), each beside its limit.
import type { Provider } from '../lib/database';
import type { Figure, ScenarioResult } from '../lib/report';
import type { Measured } from './journey';
import { PROFILE_CONDITION, type ProfileFigures } from './profiles';

export type { ProfileFigures };

const figure = (m: Measured, unit = 'ms'): Figure => ({ value: m.value, unit, ...(m.note ? { note: m.note } : {}) });
const ms = (value: number, note: string): Figure => ({ value, unit: 'ms', note });

/** Issue 14 §3: "10M profiles imported in ≤ 60 s on SQLite, with PostgreSQL measured too". */
const importTarget = (provider: Provider) =>
  provider === 'sqlite' ? { target: { value: 60_000, direction: 'lower' as const, text: '≤ 60 s', scalesWithUsers: true } } : {};

export function profileRows(f: ProfileFigures, provider: Provider, users: string): ScenarioResult[] {
  const planLimit = ms(f.planLimit, '(bare plan: evaluatePlan on the index)');
  return [
    {
      scenario: `import ${users} profiles, 3 attributes (NDJSON stream, library)`,
      provider,
      ours: figure(f.import),
      limit: ms(f.importLimit, '(parse + index in memory, no database)'),
      ...importTarget(provider),
    },
    {
      scenario: 'counts p99 while the import runs (same process)',
      provider,
      ours: figure(f.countsDuringImport),
      target: { value: 50, direction: 'lower', text: '≤ 50 ms' },
    },
    {
      scenario: `timer over ${users} users, ${PROFILE_CONDITION}: fire → counts (engine only)`,
      provider,
      ours: figure(f.timer),
      limit: planLimit,
      target: { value: 100, direction: 'lower', text: '≤ 100 ms', scalesWithUsers: true },
    },
    {
      scenario: `audience estimate of that condition over ${users} users, p99 (library)`,
      provider,
      ours: figure(f.audience),
      limit: planLimit,
      target: { value: 50, direction: 'lower', text: '≤ 50 ms' },
    },
    {
      scenario: `audience estimate right after a profile write (plan evaluated anew), ${users} users, p99`,
      provider,
      ours: figure(f.audienceAfterWrite),
      limit: planLimit,
      target: { value: 50, direction: 'lower', text: '≤ 50 ms' },
    },
    {
      scenario: `profile index load from its snapshot, ${users} profiles`,
      provider,
      ours: figure(f.snapshotLoad),
      target: { value: 5_000, direction: 'lower', text: '≤ 5 s', scalesWithUsers: true },
    },
    { scenario: `profile index rebuild from rows after a crash, ${users} profiles`, provider, ours: figure(f.rowsRebuild) },
    { scenario: 'profile index memory per profile (3 attributes)', provider, ours: figure(f.memory, 'B') },
    ...(f.http
      ? [
          {
            scenario: `import ${users} profiles over HTTP (NDJSON stream)`,
            provider,
            ours: figure(f.http.import),
            limit: ms(f.importLimit, '(parse + index in memory, no database)'),
            ...importTarget(provider),
          },
          {
            scenario: 'counts p99 over HTTP while an HTTP import runs',
            provider,
            ours: figure(f.http.countsDuringImport),
            target: { value: 50, direction: 'lower' as const, text: '≤ 50 ms' },
          },
          {
            scenario: `boot with ${users} profiles until the first count is answered`,
            provider,
            ours: figure(f.http.bootToFirstCount),
            target: { value: 5_000, direction: 'lower' as const, text: '≤ 5 s' },
          },
        ]
      : []),
  ];
}
