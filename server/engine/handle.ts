// What the rest of the server (routes, ingest, boot) uses of the engine. Two implementations: `Engine` runs the
// partitions in this thread (tests, the engine-only bench, the engine thread itself); `EngineClient`
// (server/engine/client.ts) answers the request thread from what the engine thread publishes and calls it for the rest.
import type { WinnerRequest } from './experiments';
import type { Principal } from '../auth';
import type { RoaringBitmap32 } from '../crowd/bitmap';
import type { IngestOutcome } from './ingest';
import type { ProfileCalls } from '../profiles/calls';
import type { PathPreview, PreviewRequest } from './preview';
import type {
  Counts,
  CountsListener,
  InstanceView,
  SnapshotView,
  StartRequest,
  StepUsers,
  HoldoutGroup,
  SubmittedOperation,
  UpdateWorkflowRequest,
  WhereIsUser,
} from './types';

export interface EngineHandle {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Ingest calls this after appending events so the partition loops read them at once. */
  wakeTenant(tenantId: string): void;
  /**
   * POST /events: decodes, validates and durably appends a batch sent as JSON text (server/engine/ingest.ts), then
   * wakes the tenant's partitions. Runs where the engine runs, so the thread answering HTTP only carries the text.
   */
  ingestBody(principal: Principal, body: Uint8Array, now: number, key?: string): Promise<IngestOutcome>;
  /** Live counts of a running instance; a stopped instance answers with its snapshot counts. */
  getCounts(tenantId: string, instanceId: string): Promise<Counts>;
  /** The user count of a running instance as this thread knows it live; undefined when it knows none (workflow views
   * then show the count recorded at start). */
  liveUserCount(instanceId: string): number | undefined;
  /** Called after committed changes of the instance's counts: at once, or coalesced to one push per 100 ms in a burst. */
  subscribeCounts(instanceId: string, listener: CountsListener): () => void;
  /** Called at once after every committed change of any instance's counts: new journal moves (the webhook pump). */
  onCountsChanged(listener: () => void): () => void;
  /** The users at `step`: the union of the shards of a running instance, or the snapshot of a stopped one. */
  stepBitmap(tenantId: string, instanceId: string, step: string, users?: StepUsers, group?: HoldoutGroup): Promise<RoaringBitmap32>;
  whereIsUser(tenantId: string, user: number): Promise<WhereIsUser>;
  /** The way one user would go through the workflow now, from their profile, the crowds and its conditions; moves no one. */
  previewPath(tenantId: string, workflowId: string, request: PreviewRequest): Promise<PathPreview>;
  /**
   * Profile writes (upserts, deletes, imports) and what reads the profile index (audience estimates, explanations,
   * fields): run where the engine's profile index is, so a process keeps one index per tenant and the thread that
   * answers HTTP neither writes an import's chunks nor applies them.
   */
  readonly profiles: ProfileCalls;
  listInstances(tenantId: string, filter?: { workflowId?: string; state?: string }): Promise<InstanceView[]>;
  getInstance(tenantId: string, instanceId: string): Promise<InstanceView>;
  getSnapshot(tenantId: string, instanceId: string): Promise<SnapshotView>;
  startInstance(tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation>;
  stopInstance(tenantId: string, instanceId: string): Promise<SubmittedOperation>;
  updateInstanceCrowd(tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation>;
  updateInstanceWorkflow(tenantId: string, instanceId: string, request: UpdateWorkflowRequest): Promise<SubmittedOperation>;
  /** Sends the rest of an experiment's users to one path: a new version, mapped onto the instance (./experiments.ts). */
  sendToWinner(tenantId: string, instanceId: string, request: WinnerRequest, now: number): Promise<SubmittedOperation>;
}
