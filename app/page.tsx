import { TenantChooser } from '@/studio/tenants';

export default function HomePage() {
  return <TenantChooser />;
}
