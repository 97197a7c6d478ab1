import { describe, expect, it } from 'vitest';
import { NAME_KINDS, nameProblem, nameSchema } from '../../core/model/names';
import { ApiError, pathSegment, tenantPath } from '../../studio/api';

const kinds = Object.entries(NAME_KINDS);

describe('the one name rule', () => {
  it.each(kinds)('refuses dot segments, slashes, escapes and control characters as a %s', (_kind, kind) => {
    for (const bad of ['', '.', '..', '.env', 'a/b', 'a\\b', '%2e%2e', 'a?b', 'a#b', 'nul\u0000', 'line\nbreak', 'x'.repeat(kind.max + 1)]) {
      expect(nameProblem(kind, bad), JSON.stringify(bad)).toMatch(new RegExp(kind.noun));
    }
  });

  it.each(kinds)('accepts a plain name as a %s', (_kind, kind) => {
    expect(nameProblem(kind, 'welcome_2')).toBeNull();
    expect(nameProblem(kind, 'w'.repeat(kind.max))).toBeNull();
  });

  it('lets labels hold spaces and letters of any script, but not trailing spaces or a leading dot', () => {
    const workflow = nameSchema(NAME_KINDS.workflow);
    expect(workflow.parse('  Welcome journey (copy)  ')).toBe('Welcome journey (copy)');
    expect(workflow.parse('Überweisung: März & Mai')).toBe('Überweisung: März & Mai');
    expect(workflow.safeParse('. hidden').success).toBe(false);
    expect(nameProblem(NAME_KINDS.apiKey, 'crm ')).toMatch(/ends with a space/);
  });

  it('keeps the narrower charsets of tenants and steps', () => {
    expect(nameProblem(NAME_KINDS.tenant, 'Acme')).toMatch(/a–z/);
    expect(nameProblem(NAME_KINDS.step, '1st')).toMatch(/starting with a letter or "_"/);
    expect(nameProblem(NAME_KINDS.crowd, 'trial users')).toMatch(/Crowd name "trial users" is not allowed/);
  });

  it('shows control characters in messages as escapes', () => {
    expect(nameProblem(NAME_KINDS.crowd, 'a\u0000b')).toContain('a\\u0000b');
  });
});

describe('studio paths', () => {
  it('encodes a segment and refuses "." and ".." before anything is sent', () => {
    expect(pathSegment('a b/c')).toBe('a%20b%2Fc');
    expect(() => pathSegment('..')).toThrow(ApiError);
    expect(() => pathSegment('.')).toThrow(ApiError);
    expect(tenantPath('acme', '/crowds/x')).toBe('/tenants/acme/crowds/x');
  });
});
