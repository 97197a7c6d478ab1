import { describe, expect, it } from 'vitest';
import { slug, stepExportName } from '../../server/workflows/step-export';

const DEC_5 = Date.UTC(2026, 11, 5, 23, 59);

describe('the file name of a step export', () => {
  it('is the journey, the step and the UTC day, slugified', () => {
    expect(stepExportName('Welcome journey', 'bought', 'in', DEC_5)).toBe('welcome-journey-bought-2026-12-05');
    expect(stepExportName('Welcome journey', 'wait_purchase', 'converted', DEC_5)).toBe('welcome-journey-wait-purchase-converted-2026-12-05');
  });

  it('keeps letters without their accents, and names what has no letter or digit left', () => {
    expect(slug('  Rentrée · Été 2026!  ')).toBe('rentree-ete-2026');
    expect(stepExportName('Приветствие', '🎉', 'in', DEC_5)).toBe('journey-step-2026-12-05');
  });

  it('cuts a long name without leaving a dash at its end', () => {
    const cut = slug(`${'a'.repeat(59)} b`);
    expect(cut).toBe('a'.repeat(59));
    expect(slug('x'.repeat(200))).toHaveLength(60);
  });
});
