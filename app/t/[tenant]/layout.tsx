import type { ReactNode } from 'react';
import { TenantShell } from '@/studio/shell';

export default async function TenantLayout({ children, params }: { children: ReactNode; params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <TenantShell tenant={decodeURIComponent(tenant)}>{children}</TenantShell>;
}
