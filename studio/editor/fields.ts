'use client';
import { apiGet, tenantPath } from '../api';
import { listOf, type CrowdView } from '../model';
import { useQuery } from '../query';
import { crowdsKey } from '../crowds';

// What the rule builder can offer in its choosers: the tenant's crowds, the profile fields of its
// profile index (with their type and most common values), and the event types seen in its log.
// Each list comes from its own endpoint; one that is missing or failing leaves that chooser to free
// typing, never the builder broken.

export type ProfileField = { path: string; type?: string; users?: number; topValues: string[] };

export type FieldCatalog = { crowds: string[]; profileFields: ProfileField[]; eventTypes: string[] };

export const EMPTY_CATALOG: FieldCatalog = { crowds: [], profileFields: [], eventTypes: [] };

type RawField = { path?: string; name?: string; field?: string; type?: string; types?: Record<string, number>; users?: number; count?: number; topValues?: unknown[]; values?: unknown[] };

/** The type most of a field's users have (`types` counts users per type). */
function mainType(raw: RawField): string | undefined {
  if (raw.type) return raw.type;
  const [top] = Object.entries(raw.types ?? {}).sort((a, b) => b[1] - a[1]);
  return top && top[1] > 0 ? top[0] : undefined;
}

/** Accepts `{fields: [...]}` or a bare array; a top value may be a scalar or `{value, count}`. */
export function readProfileFields(body: unknown): ProfileField[] {
  return listOf<RawField>(body, 'fields').flatMap((raw) => {
    const path = raw.path ?? raw.name ?? raw.field;
    if (typeof path !== 'string' || !path) return [];
    const top = (raw.topValues ?? raw.values ?? []).map((v) => (v && typeof v === 'object' && 'value' in v ? (v as { value: unknown }).value : v));
    return [{ path: path.replace(/^profile\./, ''), type: mainType(raw), users: raw.users ?? raw.count, topValues: top.filter((v) => v !== null && v !== undefined).map(String) }];
  });
}

/** Accepts `{types: [...]}`, `{eventTypes: [...]}` or a bare array of names or `{type}` objects. */
export function readEventTypes(body: unknown): string[] {
  const list = [...listOf<unknown>(body, 'types'), ...listOf<unknown>(body, 'eventTypes')];
  return list.flatMap((item) => (typeof item === 'string' ? [item] : item && typeof item === 'object' && typeof (item as { type?: unknown }).type === 'string' ? [(item as { type: string }).type] : []));
}

const quiet = async <T>(read: () => Promise<T>, fallback: T): Promise<T> => {
  try {
    return await read();
  } catch {
    return fallback;
  }
};

export function useFieldCatalog(tenant: string): FieldCatalog {
  const crowds = useQuery<CrowdView[]>(tenant ? crowdsKey(tenant) : null, async () => listOf<CrowdView>(await apiGet(tenantPath(tenant, '/crowds')), 'crowds'));
  const fields = useQuery<ProfileField[]>(tenant ? `profile-fields:${tenant}` : null, () => quiet(async () => readProfileFields(await apiGet(tenantPath(tenant, '/profiles/fields'))), []));
  const events = useQuery<string[]>(tenant ? `event-types:${tenant}` : null, () => quiet(async () => readEventTypes(await apiGet(tenantPath(tenant, '/events/types'))), []));
  return { crowds: (crowds.data ?? []).map((c) => c.name), profileFields: fields.data ?? [], eventTypes: events.data ?? [] };
}
