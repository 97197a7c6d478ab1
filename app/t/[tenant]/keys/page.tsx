import { KeysPage } from '@/studio/keys';

export default async function Keys({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <KeysPage tenant={decodeURIComponent(tenant)} />;
}
