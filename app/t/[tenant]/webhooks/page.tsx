import { WebhooksPage } from '@/studio/webhooks';

export default async function Webhooks({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <WebhooksPage tenant={decodeURIComponent(tenant)} />;
}
