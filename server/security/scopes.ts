// API key scopes: what each kind of call needs, from the method and path alone. authenticate() enforces it for every
// API key, and the OpenAPI document lists it on every operation, from this one function.

export const SCOPES = ['ingest', 'read', 'manage', 'keys'] as const;
export type Scope = (typeof SCOPES)[number];

export const SCOPE_MEANING: Record<Scope, string> = {
  ingest: 'send events (POST /events)',
  read: 'read crowds, profiles, workflows, instances, counts, exports, procedures and notifications (and keep notification consumer cursors)',
  manage: 'create, change and delete crowds, profiles and workflows; start, stop and update instances; retry procedures',
  keys: "list, create and revoke the tenant's API keys (only with scopes the creating key has itself)",
};

/** Scopes of a key created without a `scopes` field: least privilege, an integration that sends events. */
export const DEFAULT_SCOPES: Scope[] = ['ingest'];

/** `any`: every key of the tenant; `admin`: the admin token or studio session only. */
export type Requirement = Scope | 'any' | 'admin';

/** What a call to `path` (relative to /api/v1, e.g. `/tenants/acme/keys`) with `method` needs. */
export function requiredScope(method: string, path: string): Requirement {
  const [area, , sub] = path.split('/').filter(Boolean);
  const reads = method === 'GET' || method === 'HEAD';
  switch (area) {
    case 'events':
      return 'ingest';
    case 'notifications':
    case 'consumers':
      return 'read';
    case 'procedures':
      return reads ? 'read' : 'manage';
    case 'audit':
    case 'sessions':
      return 'admin';
    case 'tenants': {
      const depth = path.split('/').filter(Boolean).length;
      if (depth <= 2) return reads ? 'any' : 'admin';
      if (sub === 'keys') return 'keys';
      if (sub === 'limits' && !reads) return 'admin';
      // Audience estimates, condition explanations and path previews are POSTed (they carry a condition, a draft or
      // pretended events) but only read.
      if (sub === 'audience' || ['explain', 'preview-path'].includes(path.split('/').filter(Boolean)[4])) return 'read';
      if (sub === 'limits' && !reads) return 'admin'; // a tenant never raises its own limits
      return reads ? 'read' : 'manage';
    }
    default:
      return 'any';
  }
}

export function parseScopes(stored: string): Scope[] {
  return stored.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
}
