'use client';
import Link from 'next/link';
import { usePathname, useRouter } from 'next/navigation';
import { useEffect, type ReactNode } from 'react';
import { apiCall, apiGet } from './api';
import type { TenantView } from './model';
import { confirmLeave, useLinkGuard } from './leave-guard';
import { resetQueries, useQuery } from './query';
import { ErrorBox } from './ui';

export function useTenants() {
  return useQuery<{ tenants: TenantView[] }>('tenants', () => apiGet('/tenants'));
}

/** Redirects to the sign-in page when the session is missing or expired. */
export function useSignedIn(query: { error?: { status: number }; loading: boolean }) {
  const router = useRouter();
  const pathname = usePathname();
  // only a settled 401: a stale one from before sign-in is being re-fetched while loading
  const signedOut = query.error?.status === 401 && !query.loading;
  useEffect(() => {
    if (signedOut) router.replace(`/signin?next=${encodeURIComponent(pathname)}`);
  }, [signedOut, router, pathname]);
}

export async function signOut() {
  if (!confirmLeave()) return;
  await apiCall('DELETE', '/session');
  resetQueries();
  window.location.assign('/signin');
}

/** The header every tenant page shares: tenant picker (the tenant lives in the URL), sections, sign out. */
export function TenantShell({ tenant, children }: { tenant: string; children: ReactNode }) {
  const tenants = useTenants();
  useSignedIn(tenants);
  useLinkGuard();
  const router = useRouter();
  const pathname = usePathname();
  const base = `/t/${encodeURIComponent(tenant)}`;
  const section = (href: string, label: string, exact = false) => {
    const active = exact ? pathname === href : pathname.startsWith(href);
    return (
      <Link href={href} className={active ? 'nav-link active' : 'nav-link'}>
        {label}
      </Link>
    );
  };
  const known = tenants.data?.tenants.some((t) => t.name === tenant || t.id === tenant);
  return (
    <div className="shell">
      {/* the first stop of Tab: past the picker and six sections straight to the page */}
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          Crowdflow
        </Link>
        <label className="tenant-picker">
          <span className="muted">Tenant</span>
          <select
            aria-label="Tenant"
            data-testid="tenant-picker"
            value={tenant}
            onFocus={() => void tenants.refetch()}
            onChange={(event) => confirmLeave() && router.push(`/t/${encodeURIComponent(event.target.value)}`)}
          >
            {!known && <option value={tenant}>{tenant}</option>}
            {tenants.data?.tenants.map((t) => (
              <option key={t.id} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <nav>
          {section(base, 'Workflows', true)}
          {section(`${base}/crowds`, 'Crowds')}
          {section(`${base}/profiles`, 'Profiles')}
          {section(`${base}/procedures`, 'Procedures')}
          {section(`${base}/webhooks`, 'Webhooks')}
          {section(`${base}/keys`, 'API keys')}
        </nav>
        <button type="button" className="link signout" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      {/* tabIndex -1: the skip link moves the focus here, so the next Tab goes on into the page */}
      <main id="main" className="page" tabIndex={-1}>
        {tenants.error && tenants.error.status !== 401 && <ErrorBox error={tenants.error} />}
        {tenants.data && !known && <ErrorBox error={`Tenant "${tenant}" does not exist`} />}
        {children}
      </main>
    </div>
  );
}
