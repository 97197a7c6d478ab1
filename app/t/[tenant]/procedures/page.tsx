import { ProceduresPanel } from '@/studio/procedures';

export default async function Procedures({ params }: { params: Promise<{ tenant: string }> }) {
  const { tenant } = await params;
  return <ProceduresPanel tenant={decodeURIComponent(tenant)} />;
}
