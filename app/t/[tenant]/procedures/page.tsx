import { ProceduresPanel } from '@/studio/procedures';

export default function Procedures() {
  return <ProceduresPanel />;
}
