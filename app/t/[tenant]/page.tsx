import { WorkflowList } from '@/studio/workflows';

export default async function WorkflowsPage({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <WorkflowList tenant={decodeURIComponent(tenant)} />;
}
