'use client';
import { useEffect, useState } from 'react';
import { apiCall, tenantPath } from '../api';
import { formatCount } from '../ui';

// "≈ N users match now" under a condition, asked again shortly after each edit (the server answers from
// the profile index and crowd bitmaps in milliseconds; a per-user estimate says it is one).

type Audience = { count: number; universe: number; exact: boolean; mode: 'plan' | 'per-user' };

const ASK_AFTER_MS = 350;

export function AudienceEstimate({ tenant, condition }: { tenant: string; condition: string | null }) {
  const [audience, setAudience] = useState<Audience | null>(null);
  useEffect(() => {
    if (!tenant || !condition) {
      setAudience(null);
      return;
    }
    let current = true;
    const timer = setTimeout(() => {
      apiCall<Audience>('POST', tenantPath(tenant, '/audience'), { condition, sample: 0 })
        .then((answer) => current && setAudience(answer))
        .catch(() => current && setAudience(null)); // no estimate (older server, a condition it cannot count): say nothing
    }, ASK_AFTER_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [tenant, condition]);
  if (!audience || !condition) return null;
  return (
    <p className="muted small audience" data-testid="audience" title={audience.mode === 'plan' ? 'Counted with bitmaps over the profile index and crowds' : 'Estimated from a sample of users, one by one'}>
      {audience.exact ? '' : '≈ '}
      <strong>{formatCount(audience.count)}</strong> user{audience.count === 1 ? '' : 's'} match now (of {formatCount(audience.universe)})
    </p>
  );
}
