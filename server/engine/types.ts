import type { ExperimentFigures } from '../../core/model/experiment';
import type { Lift } from '../../core/model/lift';
import type { Reentry } from '../../core/model/workflow';

export { REENTRY_MODES, type Reentry } from '../../core/model/workflow';

/** One event as the log holds it (see index.ts): `time` is epoch milliseconds. */
export type LoggedEvent = { user: number; type: string; data: Record<string, unknown>; time: number };

export type InstanceState = 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

export interface InstanceView {
  id: string;
  tenantId: string;
  workflowId: string;
  version: number;
  crowdName: string;
  state: InstanceState;
  userCount: number;
  excludedCount: number;
  reentry: Reentry;
  createdAt: string;
  startedAt: string | null;
  stoppedAt: string | null;
}

/** Per-step user counts (summed over partitions) and how many users took each edge ("from->to"). */
export interface Counts {
  instanceId: string;
  total: number;
  /** Users who entered the instance: the start crowd, crowd updates and event-triggered entries (a re-entry counts again). */
  entered: number;
  /** With a goal: users who reached it (once per instance each), and how many did from each step. */
  converted?: number;
  convertedFrom?: Record<string, number>;
  /** With exit criteria: users who met them and left the journey, and how many did from each step (server/engine/exit.ts). */
  exited?: number;
  exitedFrom?: Record<string, number>;
  steps: Record<string, number>;
  edges: Record<string, number>;
  /**
   * With a holdout: the held-out users' entries (counted as `entered` is) and, with a goal, those of them who converted
   * (also counted in `converted`). The rest of `entered` and `converted` is the treated group.
   */
  holdout?: { entered: number; converted?: number };
  /** With a holdout and a goal: both groups' conversion and the lift (core/model/lift.ts), added by the HTTP layer. */
  lift?: Lift;
  /**
   * With a goal, per split step run as an experiment: each path's users and conversions (and the winner, once set); the
   * HTTP layer adds each path's rate, interval and probability of being best (core/model/experiment.ts).
   */
  experiments?: Record<string, ExperimentFigures>;
  /** Per step, users whose enter-action delivery a frequency cap skipped: added by the HTTP layer (counts route and
   * stream) from server/webhooks/capping.ts, never by the engine. */
  capped?: Record<string, { users: number; skipped: number }>;
  /** Per step, users waiting for quiet hours to end before their enter-action delivery, and deliveries quiet hours
   * dropped: added by the HTTP layer from server/webhooks/quiet-holding.ts, never by the engine. */
  quiet?: Record<string, { waiting: number; dropped: number }>;
}

export interface SnapshotView {
  instanceId: string;
  workflowId: string;
  version: number;
  counts: Counts;
  createdAt: string;
  expiresAt: string;
}

export interface UserMove {
  seq: number;
  instanceId: string;
  fromStep: string | null;
  toStep: string;
  time: string;
}

export interface WhereIsUser {
  user: number;
  instances: { instanceId: string; workflowId: string; step: string }[];
  recentMoves: UserMove[];
  /** False when the search for bulk moves stopped at its limit (server/engine/user-moves.ts) before the end. */
  recentMovesComplete: boolean;
  /** With `recentMovesComplete` false: bulk moves with this seq or older were not searched. */
  recentMovesSearchedBackTo?: number;
}

/** Which users of a step an export reads: those in it now, those who reached the goal from it, or those who left the journey from it by its exit criteria. */
export type StepUsers = 'in' | 'converted' | 'exited';

/** Which group of a journey with a holdout an export reads: the held-out users, or everyone else (treated). */
export type HoldoutGroup = 'holdout' | 'treatment';

export interface StartRequest {
  /** Optional when the workflow has an entry trigger: users then enter only by events. */
  crowd?: string;
  version?: number;
  reentry?: Reentry;
}

export interface UpdateWorkflowRequest {
  version: number;
  /** Users of steps the new version removes go to the mapped step (a step of the new version). */
  mapping?: Record<string, string>;
}

export interface SubmittedOperation {
  procedureId: string;
  instanceId: string;
}

/** Which partitions an engine's counts of an instance include (all of them unless it is one member of a cluster). */
export interface CountsCoverage {
  held: number[];
  partitions: number;
}

export type CountsListener = (counts: Counts) => void;
