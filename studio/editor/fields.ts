'use client';
import { apiGet, tenantPath } from '../api';
import { listOf, type CrowdView } from '../model';
import { useQuery } from '../query';
import { crowdsKey } from '../crowds';
import { formatCount } from '../ui';

// What the rule builder can offer in its choosers: the tenant's crowds, the profile fields of its
// profile index (with their type and most common values), and the event types seen in its log.
// Each list comes from its own endpoint; one that is missing or failing leaves that chooser to free
// typing, never the builder broken.

/** A value a chooser offers, with what is known about it ("5 events recently", "1,200 users"). */
export type Suggestion = { value: string; label?: string };

export type ProfileField = { path: string; type?: string; users?: number; topValues: Suggestion[] };

export type FieldCatalog = { crowds: string[]; profileFields: ProfileField[]; eventTypes: Suggestion[] };

export const EMPTY_CATALOG: FieldCatalog = { crowds: [], profileFields: [], eventTypes: [] };

type RawField = {
  path?: string;
  name?: string;
  field?: string;
  type?: string;
  types?: Record<string, number>;
  users?: number;
  count?: number;
  topValues?: unknown[];
  values?: unknown[];
};

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
    const top = (raw.topValues ?? raw.values ?? []).flatMap((v): Suggestion[] => {
      const { value, users } = v && typeof v === 'object' && 'value' in v ? (v as { value: unknown; users?: unknown }) : { value: v, users: undefined };
      if (value === null || value === undefined) return [];
      return [{ value: String(value), ...(typeof users === 'number' ? { label: `${formatCount(users)} users` } : {}) }];
    });
    return [{ path: path.replace(/^profile\./, ''), type: mainType(raw), users: raw.users ?? raw.count, topValues: top }];
  });
}

/** Accepts `{types: [...]}`, `{eventTypes: [...]}` or a bare array of names or `{type, events?}` objects. */
export function readEventTypes(body: unknown): Suggestion[] {
  const list = [...listOf<unknown>(body, 'types'), ...listOf<unknown>(body, 'eventTypes')];
  return list.flatMap((item): Suggestion[] => {
    if (typeof item === 'string') return [{ value: item }];
    const { type, events } = (item ?? {}) as { type?: unknown; events?: unknown };
    if (typeof type !== 'string') return [];
    return [{ value: type, ...(typeof events === 'number' ? { label: `${formatCount(events)} event${events === 1 ? '' : 's'} recently` } : {}) }];
  });
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
  const fields = useQuery<ProfileField[]>(tenant ? `profile-fields:${tenant}` : null, () =>
    quiet(async () => readProfileFields(await apiGet(tenantPath(tenant, '/profiles/fields'))), []),
  );
  const events = useQuery<Suggestion[]>(tenant ? `event-types:${tenant}` : null, () =>
    quiet(async () => readEventTypes(await apiGet(tenantPath(tenant, '/events/types'))), []),
  );
  return { crowds: (crowds.data ?? []).map((c) => c.name), profileFields: fields.data ?? [], eventTypes: events.data ?? [] };
}
