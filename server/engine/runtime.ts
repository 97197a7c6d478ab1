// A workflow version prepared for running: steps by name, conditions compiled once, split tables, bucket widths.
import { compileCondition, requireCondition, type CompiledCondition } from '../conditions/compile';
import { parseDuration, type EntryTrigger, type Step, type WorkflowDefinition } from '../../core/model/workflow';
import type { SplitStepOf } from '../../core/model/experiment';
import { holdoutPlan, type HoldoutPlan } from '../../core/model/holdout';
import { fnv1a, mix } from '../../core/model/user-hash';
import { bucketWidth } from './shard';

export interface StepRuntime {
  step: Step;
  /** Branch steps: one compiled condition per branch, in order. */
  conditions: CompiledCondition[];
  /**
   * Branch steps none of whose conditions reads `event` (docs/journeys.md "Semantics", branchRoutesOnEntry): users
   * entering are routed at once (moves.ts), instead of waiting for an event that could not change the answer.
   */
  routesOnEntry: boolean;
  /** Timer steps: the optional condition. */
  timerCondition: CompiledCondition | null;
  /**
   * Delay steps, and branch steps with a timeout: users move to `delayNext` `delayMs` after entering, taken from
   * entry-time buckets of `delayBucketMs` (shard.delays). Null/0 for other steps.
   */
  delayNext: string | null;
  delayMs: number;
  delayBucketMs: number;
  ttlMs: number;
  ttlBucketMs: number;
  /** Split steps: cumulative upper bounds in [0, 1) per path, and the per-step hash seed. */
  splitBounds: number[];
  splitSeed: number;
  /** Split steps: the path taking 100% (an experiment's winner): everyone goes there without a hash per user; else -1. */
  splitAll: number;
  /** Tags carried by a move into this step (parallel: its enterAction and then its actions, comma-separated). */
  enterTags: string | null;
}

/**
 * The workflow's exit criteria, compiled. `bulk`: the condition reads no `event` (only profiles, crowds, `user`,
 * `now`), so besides each event it is checked for whole bitmaps of users: those of a bulk move and, at each timer
 * firing, everyone in the journey (server/engine/exit.ts).
 */
export interface ExitRuntime {
  condition: CompiledCondition;
  bulk: boolean;
}

/** The workflow's event-triggered entry, its condition compiled. */
export interface TriggerRuntime {
  trigger: EntryTrigger;
  condition: CompiledCondition | null;
}

export class WorkflowRuntime {
  readonly steps = new Map<string, StepRuntime>();
  readonly entry: string;
  /** Steps where users wait for events (branch steps), the only ones an event can move users out of. */
  readonly eventSteps: string[];
  /** Steps users end in (direct or parallel steps without a next): with re-entry `again`, users there may enter again. */
  readonly exitSteps: Set<string>;
  readonly trigger: TriggerRuntime | null;
  /** The goal's condition: users for whom it holds on an event are converted (goal.ts). */
  readonly goal: CompiledCondition | null;
  /** The exit criteria: users who meet them leave the journey from the step they are in (exit.ts). */
  readonly exit: ExitRuntime | null;
  readonly stopAt: number | null;
  /** Who of the entering users is held out (a control group that gets no action deliveries); null: nobody. */
  readonly holdout: HoldoutPlan | null;
  /** Split steps run as experiments, by name: shards keep who took each of their paths (Shard.tookPath). */
  readonly experiments = new Map<string, SplitStepOf>();

  /** `workflowId` salts split and holdout assignment, so two workflows' splits are independent (each keeps it across versions). */
  constructor(
    readonly definition: WorkflowDefinition,
    workflowId: string,
  ) {
    this.entry = definition.steps[0].name;
    for (const step of definition.steps) this.steps.set(step.name, prepare(step, workflowId));
    this.eventSteps = definition.steps.filter((s) => s.kind === 'branch').map((s) => s.name);
    this.exitSteps = new Set(definition.steps.filter((s) => (s.kind === 'direct' || s.kind === 'parallel') && !s.next).map((s) => s.name));
    const entry = definition.entry;
    this.trigger = entry
      ? { trigger: { ...entry, reentry: entry.reentry ?? 'once' }, condition: entry.condition ? compileStored(entry.condition) : null }
      : null;
    this.goal = definition.goal ? compileStored(definition.goal.condition) : null;
    const exit = definition.exit ? compileStored(definition.exit.condition) : null;
    this.exit = exit ? { condition: exit, bulk: !exit.usesEvent } : null;
    this.stopAt = definition.stopAt ? Date.parse(definition.stopAt) : null;
    this.holdout = holdoutPlan(definition.holdout, workflowId);
    for (const step of definition.steps) if (step.kind === 'split' && step.experiment) this.experiments.set(step.name, step);
  }

  /** Whether a move from `from` to `to` takes a path of an experiment (each of its paths leads to its own step). */
  isExperimentPath(from: string | null, to: string): from is string {
    return from !== null && (this.experiments.get(from)?.paths.some((path) => path.next === to) ?? false);
  }

  /**
   * Whether a move from `from` to `to` is a user entering the instance: from nowhere (a start crowd, a crowd update,
   * a trigger), or, with re-entry `again`, from an exit step back to the entry step (the only move out of an exit step).
   */
  isEntry(from: string | null, to: string): boolean {
    return from === null || (to === this.entry && this.trigger?.trigger.reentry === 'again' && this.exitSteps.has(from));
  }

  get(name: string): StepRuntime {
    const step = this.steps.get(name);
    if (!step) throw new Error(`Step "${name}" is not in this workflow version`);
    return step;
  }

  /** Whether any condition needs the user's profile or crowd memberships (so a batch loads them). */
  usesProfiles(): boolean {
    for (const s of this.steps.values()) if (s.conditions.some((c) => c.usesProfile) || s.timerCondition?.usesProfile) return true;
    return false;
  }

  /** Crowds the conditions read (the trigger's, goal's and exit criteria's too), and the trigger's crowd. */
  crowdsUsed(): string[] {
    const names = new Set<string>([...(this.trigger?.condition?.crowds ?? []), ...(this.goal?.crowds ?? []), ...(this.exit?.condition.crowds ?? [])]);
    if (this.trigger?.trigger.crowd) names.add(this.trigger.trigger.crowd);
    for (const s of this.steps.values())
      for (const c of [...s.conditions, ...(s.timerCondition ? [s.timerCondition] : [])]) for (const n of c.crowds) names.add(n);
    return [...names];
  }
}

/** A condition of a stored version, through the gate's rules for versions saved before the RE2 and cost rules. */
const compileStored = (text: string): CompiledCondition => compileCondition(requireCondition(text, 'stored'));

function prepare(step: Step, workflowId: string): StepRuntime {
  // Re-evaluating an idle user as a data-less event can only move users of branch steps; other kinds ignore ttl.
  const ttlMs = step.ttl && step.kind === 'branch' ? parseDuration(step.ttl) : 0;
  const runtime: StepRuntime = {
    step,
    conditions: [],
    routesOnEntry: false,
    timerCondition: null,
    delayNext: null,
    delayMs: 0,
    delayBucketMs: 0,
    ttlMs,
    ttlBucketMs: ttlMs ? bucketWidth(ttlMs) : 0,
    splitBounds: [],
    splitSeed: 0,
    splitAll: -1,
    enterTags: step.enterAction ?? null,
  };
  switch (step.kind) {
    case 'branch':
      runtime.conditions = step.branches.map((b) => compileStored(b.condition));
      runtime.routesOnEntry = runtime.conditions.every((condition) => !condition.usesEvent);
      if (step.timeout) waitThenMove(runtime, step.timeout.after, step.timeout.next);
      break;
    case 'timer':
      runtime.timerCondition = step.condition ? compileStored(step.condition) : null;
      break;
    case 'delay':
      waitThenMove(runtime, step.after, step.next);
      break;
    case 'split': {
      let sum = 0;
      const total = step.paths.reduce((a, p) => a + p.percent, 0) || 1;
      runtime.splitBounds = step.paths.map((p) => (sum += p.percent / total));
      runtime.splitSeed = splitSeed(step, workflowId);
      runtime.splitAll = step.paths.findIndex((p) => p.percent === total);
      break;
    }
    case 'parallel':
      runtime.enterTags = [step.enterAction, ...step.actions].filter(Boolean).join(',') || null;
      break;
    case 'direct':
      break;
  }
  return runtime;
}

function waitThenMove(runtime: StepRuntime, after: string, next: string): void {
  runtime.delayNext = next;
  runtime.delayMs = parseDuration(after);
  runtime.delayBucketMs = bucketWidth(runtime.delayMs);
}

/**
 * A split's hash seed: its explicit `seed` when it has one (splits sharing a seed, in any workflow, put each user on
 * the same path index), else the workflow id and step name (independent of every other workflow's splits, and the
 * same in every version of this workflow).
 */
export function splitSeed(step: Extract<Step, { kind: 'split' }>, workflowId: string): number {
  return fnv1a(step.seed === undefined ? `${workflowId}\u0000${step.name}` : `seed\u0000${step.seed}`);
}

/** The path index a split step sends `user` to: the same answer for the same user and step, every time. */
export function splitPath(runtime: StepRuntime, user: number): number {
  const point = mix(user, runtime.splitSeed) / 4294967296;
  const bounds = runtime.splitBounds;
  for (let i = 0; i < bounds.length - 1; i++) if (point < bounds[i]) return i;
  return bounds.length - 1;
}
