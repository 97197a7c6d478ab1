// Shapes of the v1 API responses the studio reads (the server's JSON, as agreed in the REST contract).
import type { WorkflowDefinition, WorkflowDraft, WorkflowProblem, WorkflowSchedule } from '../server/model/workflow';

export type WorkflowView = {
  id: string;
  name: string;
  version: number;
  definition: WorkflowDefinition;
  draft: WorkflowDraft | null;
  schedule: WorkflowSchedule | null;
  createdAt: string;
  updatedAt: string;
  running: { instanceId: string; userCount: number } | null;
};

export type CrowdView = { name: string; count: number; sizeBytes: number; createdAt: string; updatedAt: string };

export type InstanceView = {
  id: string;
  workflowId: string;
  version: number;
  crowdName: string;
  state: 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';
  userCount: number;
  excludedCount: number;
  createdAt: string;
  startedAt: string | null;
  stoppedAt: string | null;
};

export type Counts = { instanceId: string; total: number; steps: Record<string, number>; edges: Record<string, number> };

export type SnapshotView = { instanceId: string; workflowId: string; version: number; counts: Counts; createdAt: string; expiresAt: string };

export type ProcedureView = {
  id: string;
  type: string;
  parentId: string | null;
  tenantId: string | null;
  workflowId: string | null;
  state: 'running' | 'retrying' | 'prepare-rollback' | 'rolling-back' | 'done' | 'failed';
  step: number;
  error: string | null;
  rollbackError: string | null;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
};

export const PROCEDURE_FINISHED = ['done', 'failed'];

export type { WorkflowProblem };

/** List endpoints answer `{<plural>: [...]}`; accept a bare array too so the UI does not depend on the wrapper. */
export function listOf<T>(body: unknown, key: string): T[] {
  if (Array.isArray(body)) return body as T[];
  const value = (body as Record<string, unknown> | null)?.[key];
  return Array.isArray(value) ? (value as T[]) : [];
}
