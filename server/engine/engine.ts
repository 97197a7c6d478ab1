import { AppError } from '../errors';
import { systemClock, type Clock } from '../clock';
import type { RoaringBitmap32 } from '../crowd/bitmap';
import type {
  Counts,
  CountsListener,
  InstanceView,
  SnapshotView,
  StartRequest,
  SubmittedOperation,
  UpdateWorkflowRequest,
  WhereIsUser,
} from './types';

export interface EngineOptions {
  clock?: Clock;
  /** Lease owner name; a process restarting under the same name takes its partitions back at once. */
  owner?: string;
}

const notYet = () => new AppError('unprocessable', 'not implemented yet');

/** One engine per process: partition owner loops, shards in memory, timers, counts. */
export class Engine {
  readonly clock: Clock;

  constructor(options: EngineOptions = {}) {
    this.clock = options.clock ?? systemClock;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  /** Refuses an empty crowd, an invalid workflow or a running instance at once; the rest runs as `instance.start`. */
  async startInstance(tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
    throw notYet();
  }

  async stopInstance(tenantId: string, instanceId: string): Promise<SubmittedOperation> {
    throw notYet();
  }

  async updateInstanceCrowd(tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation> {
    throw notYet();
  }

  /** 409 with details.stranded {step: count} when users of removed steps are not mapped. */
  async updateInstanceWorkflow(tenantId: string, instanceId: string, request: UpdateWorkflowRequest): Promise<SubmittedOperation> {
    throw notYet();
  }

  async listInstances(tenantId: string, filter: { workflowId?: string; state?: string } = {}): Promise<InstanceView[]> {
    throw notYet();
  }

  async getInstance(tenantId: string, instanceId: string): Promise<InstanceView> {
    throw notYet();
  }

  /** Live counts of a running instance; a stopped instance answers with its snapshot counts. */
  async getCounts(tenantId: string, instanceId: string): Promise<Counts> {
    throw notYet();
  }

  /** Called after every committed change of the instance's counts (coalesced, well within a second). */
  subscribeCounts(instanceId: string, listener: CountsListener): () => void {
    throw notYet();
  }

  /** The users at `step`: the union of the shards of a running instance, or the snapshot of a stopped one. */
  async stepBitmap(tenantId: string, instanceId: string, step: string): Promise<RoaringBitmap32> {
    throw notYet();
  }

  async whereIsUser(tenantId: string, user: number): Promise<WhereIsUser> {
    throw notYet();
  }

  async getSnapshot(tenantId: string, instanceId: string): Promise<SnapshotView> {
    throw notYet();
  }

  /** Ingest calls this after appending events so the partition loops read them at once. */
  wakeTenant(tenantId: string): void {}
}

const globalKey = Symbol.for('crowdflow.engine');
const store = globalThis as unknown as Record<symbol, Engine | undefined>;

/** The process's engine (created on first use; started by boot). */
export function getEngine(): Engine {
  return (store[globalKey] ??= new Engine());
}

export async function startEngine(options: EngineOptions = {}): Promise<Engine> {
  const engine = store[globalKey] ?? new Engine(options);
  store[globalKey] = engine;
  await engine.start();
  return engine;
}

export async function stopEngine(): Promise<void> {
  await store[globalKey]?.stop();
  store[globalKey] = undefined;
}

/** Tests run their own engine (ManualClock); this makes getEngine() return it. */
export function setEngineForTests(engine: Engine | undefined): void {
  store[globalKey] = engine;
}
