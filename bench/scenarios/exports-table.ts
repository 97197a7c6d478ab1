// The export scenarios' rows in the results table (issue 38 §1 and §3 targets).
import type { Provider } from '../lib/database';
import type { Figure, ScenarioResult } from '../lib/report';
import type { ExportFigures } from './exports';
import type { Measured } from './journey';

export type { ExportFigures };

const figure = (m: Measured): Figure => ({ value: m.value, unit: 'ms', ...(m.note ? { note: m.note } : {}) });

export function exportRows(f: ExportFigures, provider: Provider, users: string): ScenarioResult[] {
  const target = { value: 3_000, direction: 'lower' as const, text: '≤ 3 s', scalesWithUsers: true };
  return [
    { scenario: `export a ${users}-user step with 3 profile columns as CSV (HTTP)`, provider, ours: figure(f.csv), target },
    { scenario: `export a ${users}-user step with 3 profile columns as Parquet (HTTP)`, provider, ours: figure(f.parquet), target },
    {
      scenario: `save a ${users}-user step as a new crowd (HTTP, median)`,
      provider,
      ours: figure(f.stepCrowd),
      target: { value: 50, direction: 'lower', text: '≤ 50 ms', scalesWithUsers: true },
    },
  ];
}
