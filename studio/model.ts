// The v1 API's response shapes, as the server declares them: type-only imports (erased at build time, so no
// server code reaches the browser), never a second declaration that could drift from the server's.
import type { WorkflowProblem } from '../core/model/workflow';

export type { WorkflowView, WorkflowSummary, VersionView } from '../server/workflows/workflows';
export type { CrowdView } from '../server/crowd/store';
export type { InstanceView, SnapshotView, Counts, WhereIsUser } from '../server/engine/types';
export type { PathPreview, PreviewEvent, PreviewHop } from '../server/engine/preview';
export type { ProcedureView } from '../server/procedures/types';
export type { ProcedureDetail, ProcedureStepView } from '../server/procedures/api';
export type { TenantView } from '../server/tenants/tenants';
export type { ProfileView } from '../server/profiles/profiles';
export type { FieldSummary, StepConditionExplanation, AudienceResult } from '../server/profiles/audience';
export type { WorkflowProblem };

export const PROCEDURE_FINISHED = ['done', 'failed'];

/** List endpoints answer `{<plural>: [...]}`; accept a bare array too so the UI does not depend on the wrapper. */
export function listOf<T>(body: unknown, key: string): T[] {
  if (Array.isArray(body)) return body as T[];
  const value = (body as Record<string, unknown> | null)?.[key];
  return Array.isArray(value) ? (value as T[]) : [];
}
