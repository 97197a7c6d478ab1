import { CrowdsPage } from '@/studio/crowds';

export default async function Crowds({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <CrowdsPage tenant={decodeURIComponent(tenant)} />;
}
