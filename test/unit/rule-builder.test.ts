import { describe, expect, it } from 'vitest';
import type { RuleGroupType } from 'react-querybuilder';
import { celSyntaxProblem } from '../../core/conditions/parse';
import { celToQuery, queryToCel, sameCel } from '../../studio/rules';

// The rule builder writes CEL and reads it back; both directions must agree exactly, or the editor
// has to fall back to raw CEL rather than silently change a marketer's condition.

function roundTrip(cel: string): string {
  const parsed = celToQuery(cel);
  if (!parsed.ok) throw new Error(`not representable: ${parsed.reason}`);
  return queryToCel(parsed.query);
}

describe('rule builder ↔ CEL', () => {
  it('writes valid CEL for every operator the builder offers, typing digits as numbers', () => {
    const query: RuleGroupType = {
      combinator: 'and',
      rules: [
        { field: 'event.type', operator: '=', value: 'purchase' },
        { field: 'event.data.amount', operator: '>=', value: '100' },
        { field: 'profile.zip', operator: '=', value: 'A-0123' },
        { field: 'user', operator: 'in', value: '1, 2, 3' },
        {
          combinator: 'or',
          rules: [
            { field: 'profile.country', operator: 'notIn', value: 'FR,DE' },
            { field: 'profile.name', operator: 'beginsWith', value: 'A' },
            { field: 'inCrowd', operator: '=', value: 'vip' },
            { field: 'inCrowd', operator: '!=', value: 'churned' },
          ],
        },
      ],
    };
    const cel = queryToCel(query);
    expect(cel).toBe(
      'event.type == "purchase" && event.data.amount >= 100 && profile.zip == "A-0123" && user in [1, 2, 3] && ' +
        '(!(profile.country in ["FR", "DE"]) || profile.name.startsWith("A") || inCrowd("vip") || !inCrowd("churned"))',
    );
    expect(celSyntaxProblem(cel)).toBeNull();
  });

  it('reads back what it wrote: query → CEL → query → CEL is stable', () => {
    const texts = [
      'event.type == "purchase" && event.data.amount > 100',
      'inCrowd("vip") || profile.tier != "gold"',
      '!inCrowd("churned") && event.type.contains("click")',
      'profile.country in ["FR", "DE"] && user in [1, 2]',
      'event.type == "a" && (profile.age >= 18 || profile.name.endsWith("x"))',
    ];
    for (const text of texts) expect(sameCel(roundTrip(text), text), text).toBe(true);
  });

  it('an empty builder is "true" and "true" opens as an empty builder', () => {
    expect(queryToCel({ combinator: 'and', rules: [] })).toBe('true');
    const parsed = celToQuery('true');
    expect(parsed.ok && parsed.query.rules).toEqual([]);
  });

  it('refuses CEL it cannot show instead of dropping parts of it', () => {
    for (const text of [
      'event.data.amount * 2 > 10',
      'size(event.type) > 3',
      'event.type == "a" ? profile.x : false',
      'now > timestamp("2026-01-01T00:00:00Z")',
    ]) {
      const parsed = celToQuery(text);
      expect(parsed.ok, text).toBe(false);
      if (!parsed.ok) expect(parsed.syntax).toBe(false);
    }
  });

  it('reports syntax errors with the CEL parser message', () => {
    const parsed = celToQuery('event.type == ');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.syntax).toBe(true);
      expect(parsed.reason.length).toBeGreaterThan(0);
    }
  });
});
