import { WorkflowEditorPage } from '@/studio/editor/editor';

export default async function WorkflowPage({ params }: { params: Promise<{ tenant: string; id: string }> }) {
  const { tenant, id } = await params;
  return <WorkflowEditorPage tenant={decodeURIComponent(tenant)} id={id} />;
}
