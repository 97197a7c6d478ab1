// "Preview one user's path" (POST …/workflows/{id}/preview-path): the way one user WOULD go through a workflow now,
// read from their profile, the tenant's crowds and the workflow's conditions, moving no one and writing nothing.
// The conditions are the running version's (or, with no instance running, the newest saved version's), each compiled
// from a stored version through the one gate (core/conditions/gate.ts, via WorkflowRuntime); the walk is metered by
// the ad hoc query deadline (server/conditions/deadline.ts), like audience estimates and explanations.
//
// Where the walk starts: the step the user rests in in the running instance, else the entry step (as if the user
// entered now). Then, step by step, as the engine would move them (moves.ts):
// - direct and parallel steps move on at once; a split sends the user down the path its hash picks (splitPath);
// - a branch step that routes on entry (no condition reads `event`) takes the first branch true for the user now;
// - a branch step that waits for events is offered the pretended events, in order, each `now` (one consumed per try):
//   the first branch an event makes true moves the user; with no pretended event left, a ttl re-evaluation (a
//   data-less event) may move them, then the timeout; else the user waits there;
// - a delay step moves them on after its duration, a timer step at its next firing when its condition holds now.
// Pretended events are kept for the next step that waits for an event (time passes at delays, timers and timeouts
// without using them). A walk that comes back to a step with the same events left is a loop: it stops there.
// Exit criteria (exit.ts) end the walk where the engine would take the user out: criteria reading no event that hold
// now, at the start (the engine checks them at the user's next bulk move, timer firing or event); criteria that a
// pretended event makes true, at the step it is offered in, before its branches.
import { ConditionCostExceeded } from '../../core/conditions/cost';
import { QueryDeadline, type DeadlineOptions } from '../conditions/deadline';
import type { CompiledCondition, ConditionEvent } from '../conditions/compile';
import { committedInstances, committedShard } from './committed';
import { loadDefinition } from './instance-store';
import { partitionOf } from './partitioning';
import type { ReadSource } from './reads';
import { splitPath, WorkflowRuntime, type StepRuntime } from './runtime';
import type { TenantData } from './context';

/** At most this many hops are walked (a long chain of steps still fits; a loop stops earlier). */
export const MAX_PREVIEW_HOPS = 200;

export type PreviewEvent = { type: string; data?: Record<string, unknown> };

/** Why the user would go from one step to the next. */
export type PreviewHop = {
  from: string;
  to: string;
  /**
   * `next`: a direct or parallel step moves on at once; `branch`: branch `branch` (0-based) holds, on pretended event
   * `event` (0-based) or with no event; `ttl`: a branch re-evaluated with no event after `after`; `timeout`: a
   * branch's timeout after `after`; `split`: path `path` with `percent`; `delay`: after `after`; `timer`: when the
   * timer's cron fires (`cron`), its condition holding now.
   */
  by: 'next' | 'branch' | 'ttl' | 'timeout' | 'split' | 'delay' | 'timer';
  branch?: number;
  event?: number;
  condition?: string;
  after?: string;
  path?: number;
  percent?: number;
  cron?: string;
};

/**
 * Where the walk stops: an exit step, the exit criteria (`exited`), a step waiting (for an event, or a timer whose
 * condition is false now), or a loop.
 */
export type PreviewEnd = {
  step: string;
  reason: 'exit' | 'exited' | 'waits-for-event' | 'waits-for-timer' | 'loop' | 'hop-limit';
  /** A timer whose condition is false now: its cron. */
  cron?: string;
  /** Exited on a pretended event: its index (0-based). */
  event?: number;
};

export type PathPreview = {
  user: number;
  workflowId: string;
  /** The version whose conditions were evaluated: the running instance's, else the newest saved. */
  version: number;
  /** The running instance the user's current step was read from; null when none runs. */
  instanceId: string | null;
  /** `current`: from the step the user rests in now; `entry`: as if the user entered now (not in the instance, or none runs). */
  startsFrom: 'current' | 'entry';
  start: string;
  hops: PreviewHop[];
  end: PreviewEnd;
  /** Pretended events used (the rest found no step waiting for them). */
  eventsUsed: number;
  /** Conditions that were over the runtime cost budget for this user: taken as false, as the engine would dead-letter. */
  tooCostly: string[];
};

export type PreviewRequest = { user: number; events?: PreviewEvent[]; version: number };

/** The user's path through workflow `workflowId` now; reads only. `request.version` is the newest saved version. */
export async function previewPath(
  source: ReadSource & { readonly clock: DeadlineOptions['clock'] },
  tenantId: string,
  workflowId: string,
  request: PreviewRequest,
  options: Partial<DeadlineOptions> = {},
): Promise<PathPreview> {
  const tenant = await source.tenant(tenantId);
  const kept = source.committed;
  const running = (kept ? await committedInstances(tenant, kept) : [...tenant.instances.values()]).find((i) => i.record.workflowId === workflowId);
  const partition = partitionOf(request.user, tenant.partitioning);
  let current: string | null = null;
  if (running) {
    const shard = kept ? await committedShard(running, partition, kept) : running.shards[partition];
    for (const [step, bitmap] of shard?.steps ?? []) if (bitmap.has(request.user)) current = step;
  }
  const workflow = running?.workflow ?? new WorkflowRuntime(await loadDefinition(source.database, tenantId, workflowId, request.version), workflowId);
  const now = source.clock.now();
  const slices = tenant.slices();
  const walk = new Walk(workflow, tenant.data, request.user, now, request.events ?? [], {
    turn: () => slices.yield(),
    ...options,
    clock: options.clock ?? source.clock,
  });
  await walk.prepare();
  const start = current ?? workflow.entry;
  const end = await walk.from(start);
  return {
    user: request.user,
    workflowId,
    version: running?.record.version ?? request.version,
    instanceId: running?.id ?? null,
    startsFrom: current ? 'current' : 'entry',
    start,
    hops: walk.hops,
    end,
    eventsUsed: walk.eventsUsed,
    tooCostly: [...walk.tooCostly],
  };
}

class Walk {
  readonly hops: PreviewHop[] = [];
  eventsUsed = 0;
  readonly tooCostly = new Set<string>();
  private profile: Record<string, unknown> | undefined;
  private readonly deadline: QueryDeadline;

  constructor(
    private readonly workflow: WorkflowRuntime,
    private readonly data: TenantData,
    private readonly user: number,
    private readonly now: number,
    private readonly events: PreviewEvent[],
    deadline: DeadlineOptions,
  ) {
    this.deadline = new QueryDeadline('The path preview', deadline);
  }

  async prepare(): Promise<void> {
    await this.data.prepareCrowds(this.workflow.crowdsUsed());
    if (this.workflow.usesProfiles() || this.workflow.exit?.condition.usesProfile) this.profile = (await this.data.profilesOf([this.user])).get(this.user);
  }

  /** Walks from `start` until the user would rest, leave or go round. */
  async from(start: string): Promise<PreviewEnd> {
    const exit = this.workflow.exit;
    if (exit?.bulk && this.holds(exit.condition)) return { step: start, reason: 'exited' };
    const seen = new Set<string>();
    let at = start;
    for (;;) {
      await this.deadline.checkpoint(() => `${this.hops.length} steps walked`);
      const state = `${at}\u0000${this.eventsUsed}`;
      if (seen.has(state)) return { step: at, reason: 'loop' };
      seen.add(state);
      if (this.hops.length >= MAX_PREVIEW_HOPS) return { step: at, reason: 'hop-limit' };
      const runtime = this.workflow.get(at);
      const hop = this.next(runtime);
      if ('reason' in hop) return hop;
      this.hops.push(hop);
      at = hop.to;
    }
  }

  /** The hop out of the step, or where the walk ends in it. */
  private next(runtime: StepRuntime): PreviewHop | PreviewEnd {
    const step = runtime.step;
    const from = step.name;
    switch (step.kind) {
      case 'direct':
      case 'parallel':
        return step.next ? { from, to: step.next, by: 'next' } : { step: from, reason: 'exit' };
      case 'split': {
        const path = splitPath(runtime, this.user);
        return { from, to: step.paths[path].next, by: 'split', path, percent: step.paths[path].percent };
      }
      case 'delay':
        return { from, to: step.next, by: 'delay', after: step.after };
      case 'timer':
        if (runtime.timerCondition && !this.holds(runtime.timerCondition)) return { step: from, reason: 'waits-for-timer', cron: step.cron };
        return { from, to: step.next, by: 'timer', cron: step.cron, ...(step.condition ? { condition: step.condition } : {}) };
      case 'branch': {
        const taken = (event: ConditionEvent | undefined) => runtime.conditions.findIndex((condition) => this.holds(condition, event));
        if (runtime.routesOnEntry) {
          const branch = taken(undefined);
          if (branch >= 0 && step.branches[branch].next !== from) return this.branchHop(runtime, branch, undefined);
        } else {
          while (this.eventsUsed < this.events.length) {
            const index = this.eventsUsed++;
            const pretended = this.events[index];
            const event = { type: pretended.type, data: pretended.data ?? {}, time: this.now };
            if (this.workflow.exit && this.holds(this.workflow.exit.condition, event)) return { step: from, reason: 'exited', event: index };
            const branch = taken(event);
            if (branch >= 0 && step.branches[branch].next !== from) return this.branchHop(runtime, branch, index);
          }
        }
        // No event left: a ttl re-evaluation (as a data-less event) comes first when it is due before the timeout.
        if (runtime.ttlMs > 0 && step.ttl && (!runtime.delayNext || runtime.ttlMs < runtime.delayMs)) {
          const branch = taken({ type: '', data: {}, time: this.now });
          if (branch >= 0 && step.branches[branch].next !== from)
            return { from, to: step.branches[branch].next, by: 'ttl', branch, after: step.ttl, condition: step.branches[branch].condition };
        }
        if (step.timeout) return { from, to: step.timeout.next, by: 'timeout', after: step.timeout.after };
        return { step: from, reason: 'waits-for-event' };
      }
    }
  }

  private branchHop(runtime: StepRuntime, branch: number, event: number | undefined): PreviewHop {
    const step = runtime.step as Extract<StepRuntime['step'], { kind: 'branch' }>;
    return {
      from: step.name,
      to: step.branches[branch].next,
      by: 'branch',
      branch,
      condition: step.branches[branch].condition,
      ...(event === undefined ? {} : { event }),
    };
  }

  /** The condition for this user now; one over the runtime cost budget is false, as the engine would treat it. */
  private holds(condition: CompiledCondition, event?: ConditionEvent): boolean {
    try {
      return condition.predicate({ user: this.user, now: this.now, event, profile: this.profile }, this.data.membership);
    } catch (error) {
      if (!(error instanceof ConditionCostExceeded)) throw error;
      this.tooCostly.add(condition.text);
      return false;
    }
  }
}
