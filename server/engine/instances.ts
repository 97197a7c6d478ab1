// Instance operations (busybee semantics). Each is checked up front for a clear 4xx, then runs as a durable
// procedure holding an exclusive lock on the workflow; the work itself happens in operations.ts under every
// partition lock of the tenant and commits in one transaction.
import { createHash } from 'node:crypto';
import { requireCrowdMeta } from '../crowd';
import { checkInstanceUsers, tenantLimits } from '../limits/limits';
import { AppError, badRequest, conflict, notFound } from '../errors';
import { newId } from '../ids';
import { sameHoldout } from '../../core/model/holdout';
import { FINISHED_STATES, type Json, type ProcedureContext, type ProcedureInstance, type ProcedureRunner, type ProcedureStatus } from '../procedures/types';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import { instanceView, loadDefinition } from './instance-store';
import { crowdOf, nobodyLeft, previousInstance, strandedUsers } from './operations';
import { WorkflowRuntime } from './runtime';
import type { Counts, InstanceView, Reentry, SnapshotView, StartRequest, SubmittedOperation, UpdateWorkflowRequest } from './types';
import type { Database } from '../storage/database';
import { retryTransient } from '../storage/transient';

/**
 * What the instance operations need of an engine: its procedure runner, the live counts of an instance, and the
 * work itself under the partition locks (server/engine/operations.ts), done by the engine in-process or, from the
 * request thread, by a call to the engine thread (server/engine/client.ts).
 */
export interface InstanceEngine {
  /** The storage of the thread it runs in: the instance rows are read and written there. */
  readonly database: Database;
  readonly runner: ProcedureRunner;
  /** Counts of a running instance this process holds, or undefined. */
  liveCounts(tenantId: string, instanceId: string): Promise<Counts | undefined>;
  materializeStart(tenantId: string, instanceId: string): Promise<Json>;
  materializeStop(tenantId: string, instanceId: string): Promise<Json>;
  materializeUpdateCrowd(tenantId: string, instanceId: string, crowd: string): Promise<Json>;
  materializeUpdateWorkflow(tenantId: string, instanceId: string, version: number, mapping: Record<string, string>): Promise<Json>;
}

export async function requireInstance(database: Database, tenantId: string, instanceId: string) {
  const row = await database.db.instance.findFirst({ where: { id: instanceId, tenantId } });
  if (!row) throw notFound(`Instance "${instanceId}"`);
  return row;
}

export async function listInstances(database: Database, tenantId: string, filter: { workflowId?: string; state?: string } = {}): Promise<InstanceView[]> {
  const rows = await database.db.instance.findMany({
    where: { tenantId, ...(filter.workflowId ? { workflowId: filter.workflowId } : {}), ...(filter.state ? { state: filter.state } : {}) },
    orderBy: { createdAt: 'desc' },
  });
  return rows.map(instanceView);
}

export async function getInstance(database: Database, tenantId: string, instanceId: string): Promise<InstanceView> {
  return instanceView(await requireInstance(database, tenantId, instanceId));
}

export async function getSnapshot(database: Database, tenantId: string, instanceId: string): Promise<SnapshotView> {
  const row = await requireInstance(database, tenantId, instanceId);
  const snapshot = await database.db.instanceSnapshot.findUnique({ where: { instanceId, tenantId } });
  if (!snapshot) throw notFound(`Snapshot of instance ${instanceId} (it is ${row.state}, or its snapshot expired)`);
  return {
    instanceId,
    workflowId: row.workflowId,
    version: row.version,
    counts: JSON.parse(snapshot.counts) as Counts,
    createdAt: snapshot.createdAt.toISOString(),
    expiresAt: snapshot.expiresAt.toISOString(),
  };
}

async function requireWorkflow(database: Database, tenantId: string, workflowId: string) {
  const row = await database.db.workflow.findFirst({ where: { id: workflowId, tenantId } });
  if (!row) throw notFound(`Workflow "${workflowId}"`);
  return row;
}

export async function requireRunning(database: Database, tenantId: string, instanceId: string) {
  const row = await requireInstance(database, tenantId, instanceId);
  if (row.state !== 'running') throw conflict(`Instance ${instanceId} is ${row.state}, not running`, { state: row.state });
  return row;
}

async function refuseActive(database: Database, tenantId: string, workflowId: string, except?: string): Promise<void> {
  const active = await database.db.instance.findFirst({
    where: { tenantId, workflowId, state: { in: ACTIVE_INSTANCE_STATES }, ...(except ? { id: { not: except } } : {}) },
  });
  if (active)
    throw conflict(`Workflow ${workflowId} already has an instance ${active.state} (${active.id}); stop it first`, {
      instanceId: active.id,
      state: active.state,
    });
}

async function requireUsableCrowd(database: Database, tenantId: string, name: string) {
  const crowd = await requireCrowdMeta(database, tenantId, name);
  if (crowd.count === 0) throw new AppError('unprocessable', `Crowd "${name}" is empty; an instance needs at least one user`, { crowd: name });
  checkInstanceUsers(Number(crowd.count), await tenantLimits(database, tenantId));
  return crowd;
}

/** A scheduled start's crowd, with a failure that says which schedule names it and how to fix it. */
async function requireScheduledCrowd(database: Database, workflow: { id: string; name: string }, tenantId: string, crowd: string) {
  try {
    return await requireUsableCrowd(database, tenantId, crowd);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'not_found') throw error;
    throw new AppError(
      'not_found',
      `Crowd "${crowd}" named by the schedule of workflow "${workflow.name}" (${workflow.id}) does not exist: upload it and retry this procedure, or change the schedule`,
    );
  }
}

/**
 * How many users re-entry exclusion leaves out when it leaves nobody to start (else the instance would fail later);
 * null when some are left. When the crowd is larger than the previous instance was, some users are certainly left
 * and nothing is loaded.
 */
async function excludedEveryone(
  database: Database,
  tenantId: string,
  workflowId: string,
  crowd: { name: string; count: number },
  reentry: Reentry,
): Promise<number | null> {
  if (reentry === 'allow') return null;
  const previous = await previousInstance(database, tenantId, workflowId, '');
  if (!previous || crowd.count > Number(previous.userCount)) return null;
  const { users, excludedCount } = await crowdOf(database, tenantId, crowd.name, workflowId, '', reentry);
  const empty = users.isEmpty;
  users.dispose(); // read for this check only (crowdOf's caller owns it)
  return empty ? excludedCount : null;
}

/**
 * Checks everything a start needs, then creates the instance row and submits `instance.start`. A transient storage
 * error goes again (retryTransient): reads, then one transaction, so a failed attempt left nothing behind.
 */
export function submitStart(engine: InstanceEngine, tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
  return retryTransient(() => submitStartOnce(engine, tenantId, workflowId, request));
}

async function submitStartOnce(engine: InstanceEngine, tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
  const workflow = await requireWorkflow(engine.database, tenantId, workflowId);
  const version = request.version ?? workflow.currentVersion;
  const reentry = request.reentry ?? 'exclude';
  const definition = await loadDefinition(engine.database, tenantId, workflow.id, version);
  const crowd = request.crowd === undefined ? null : await requireUsableCrowd(engine.database, tenantId, request.crowd);
  // The same code as a missing required field: it is one, for a workflow without a trigger.
  if (!crowd && !definition.entry)
    throw new AppError('validation_failed', `crowd: required, because version ${version} of workflow "${workflow.name}" has no entry trigger`, {
      path: 'crowd',
    });
  await refuseActive(engine.database, tenantId, workflow.id);
  // With a trigger users also enter by events: a crowd that re-entry exclusion empties is no reason to refuse.
  if (crowd && !definition.entry) {
    const excludedCount = await excludedEveryone(engine.database, tenantId, workflow.id, crowd, reentry);
    if (excludedCount !== null) throw nobodyLeft(crowd.name, excludedCount);
  }
  const instanceId = newId('in');
  // No crowd (a trigger-only instance): crowdName is empty.
  const crowdName = request.crowd ?? '';
  const state = { tenantId, workflowId: workflow.id, crowd: crowdName, version, instanceId };
  // One transaction: an instance row left `starting` without its procedure (a procedure write refused after the
  // instance row had committed) refused every later start of the workflow until the next boot.
  const procedureId = await engine.runner.submit('instance.start', state, {
    tenantId,
    workflowId: workflow.id,
    together: async (tx) =>
      void (await tx.instance.create({
        data: { id: instanceId, tenantId, workflowId: workflow.id, version, crowdName, state: 'starting', userCount: 0, reentry },
      })),
  });
  return { procedureId, instanceId };
}

/**
 * Marks the instance stopping and submits `instance.stop`. A transient storage error goes again; an attempt that
 * finds the instance stopped after this call marked it found its own stop done (submitted before the error).
 */
export function submitStop(engine: InstanceEngine, tenantId: string, instanceId: string): Promise<SubmittedOperation> {
  let marked = false;
  return retryTransient(async () => {
    const row = await requireInstance(engine.database, tenantId, instanceId);
    const ours = marked && row.state === 'stopped';
    if (row.state !== 'running' && row.state !== 'stopping' && !ours)
      throw conflict(`Instance ${instanceId} is ${row.state}, not running`, { state: row.state });
    if (!ours) await engine.database.db.instance.updateMany({ where: { id: instanceId, tenantId, state: 'running' }, data: { state: 'stopping' } });
    marked = true;
    return { procedureId: await submitOrRetry(engine, 'instance.stop', stopState(row), `instance.stop:${instanceId}`), instanceId };
  });
}

type InstanceRow = Awaited<ReturnType<typeof requireInstance>>;

function stopState(row: InstanceRow): Json {
  return { tenantId: row.tenantId, instanceId: row.id, workflowId: row.workflowId };
}

/** Submits under a deterministic id; when that procedure already failed (an earlier attempt), retries it instead. */
async function submitOrRetry(engine: InstanceEngine, type: string, state: Json, id: string): Promise<string> {
  const { tenantId, workflowId } = state as { tenantId: string; workflowId: string };
  const procedureId = await engine.runner.submit(type, state, { id, tenantId, workflowId });
  if ((await engine.runner.get(procedureId))?.state === 'failed') await engine.runner.retry(procedureId);
  return procedureId;
}

/** How long a starting engine keeps trying through transient storage errors to resume interrupted operations. */
const BOOT_STORAGE_PATIENCE_MS = 60_000;

/**
 * At boot: an instance left `starting` or `stopping` with no unfinished procedure to finish it (a crash between
 * marking the instance and submitting its procedure, or a failed rollback) gets one, so nothing stays half-done. The
 * engine's start waits for it: a transient storage error goes again (it submits under fixed ids), instead of failing
 * the start.
 */
export function resumeInterruptedOperations(engine: InstanceEngine): Promise<void> {
  return retryTransient(() => resumeInterruptedOnce(engine), BOOT_STORAGE_PATIENCE_MS);
}

async function resumeInterruptedOnce(engine: InstanceEngine): Promise<void> {
  const stuck = await engine.database.db.instance.findMany({ where: { state: { in: ['starting', 'stopping'] } } });
  if (stuck.length === 0) return;
  const unfinished = await engine.database.db.procedure.findMany({
    where: {
      type: { in: ['instance.start', 'instance.stop'] },
      state: { notIn: [...FINISHED_STATES] },
      workflowId: { in: stuck.map((row) => row.workflowId) },
    },
    select: { id: true, type: true, data: true },
  });
  const handled = new Set(unfinished.map((p) => (JSON.parse(p.data) as { instanceId?: string }).instanceId ?? scheduledInstanceId(p.id)));
  for (const row of stuck) {
    if (handled.has(row.id)) continue;
    console.warn(`[crowdflow] instance ${row.id} was left ${row.state} with nothing to finish it; resuming`);
    if (row.state === 'stopping') await submitOrRetry(engine, 'instance.stop', stopState(row), `instance.stop:${row.id}`);
    else
      await submitOrRetry(
        engine,
        'instance.start',
        { tenantId: row.tenantId, workflowId: row.workflowId, crowd: row.crowdName, version: row.version, instanceId: row.id },
        `instance.start:${row.id}`,
      );
  }
}

export async function submitUpdateCrowd(engine: InstanceEngine, tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation> {
  const row = await requireRunning(engine.database, tenantId, instanceId);
  await requireUsableCrowd(engine.database, tenantId, request.crowd);
  const procedureId = await engine.runner.submit(
    'instance.update-crowd',
    { tenantId, instanceId, workflowId: row.workflowId, crowd: request.crowd },
    { tenantId, workflowId: row.workflowId },
  );
  return { procedureId, instanceId };
}

export async function submitUpdateWorkflow(
  engine: InstanceEngine,
  tenantId: string,
  instanceId: string,
  request: UpdateWorkflowRequest,
): Promise<SubmittedOperation> {
  const row = await requireRunning(engine.database, tenantId, instanceId);
  const definition = await loadDefinition(engine.database, tenantId, row.workflowId, request.version);
  const running = await loadDefinition(engine.database, tenantId, row.workflowId, row.version);
  if (!sameHoldout(running.holdout, definition.holdout)) {
    // Moving users between the groups mid-run would mix treated and control users in both: the lift would mean nothing.
    throw conflict(
      `Version ${request.version} holds out ${definition.holdout?.percent ?? 0}% of users and the running version ${row.version} ${running.holdout?.percent ?? 0}%` +
        `${definition.holdout?.seed !== running.holdout?.seed ? ' (with another seed)' : ''}: a holdout cannot change while an instance runs; stop it and start a new one`,
      { path: 'version' },
    );
  }
  const next = new WorkflowRuntime(definition, row.workflowId);
  const mapping = request.mapping ?? {};
  for (const [from, to] of Object.entries(mapping)) {
    if (!next.steps.has(to)) throw badRequest(`mapping.${from}: step "${to}" is not in version ${request.version}`, { path: `mapping.${from}` });
  }
  const live = await engine.liveCounts(tenantId, instanceId);
  if (live) {
    const stranded = strandedUsers(live.steps, next, mapping);
    if (Object.keys(stranded).length) {
      throw conflict(`Users of steps removed in version ${request.version} would be stranded; map each removed step to a step of the new version`, {
        stranded,
      });
    }
  }
  const state = { tenantId, instanceId, workflowId: row.workflowId, version: request.version, mapping };
  const procedureId = await engine.runner.submit('instance.update-workflow', state, { tenantId, workflowId: row.workflowId });
  return { procedureId, instanceId };
}

type OperationState = { tenantId: string; instanceId?: string; workflowId: string } & Record<string, Json | undefined>;

/** A procedure over an instance of `engine` with an exclusive lock on its workflow. */
export function operation(
  engine: InstanceEngine,
  type: string,
  run: (engine: InstanceEngine, state: OperationState, ctx: ProcedureContext) => Promise<ProcedureStatus>,
  onRollback?: (state: OperationState) => Promise<void>,
) {
  return {
    type,
    supportsRollback: onRollback !== undefined,
    create(raw: Json): ProcedureInstance {
      const state = raw as OperationState;
      return {
        lockKeys: () => [{ key: `workflow:${state.workflowId}`, mode: 'exclusive' }],
        execute: (ctx) => run(engine, state, ctx),
        rollback: onRollback ? async () => void (await onRollback(state)) : undefined,
        state: () => state as Json,
      };
    },
  };
}

/** The instance id a scheduled start (state without instanceId) uses: derived from the procedure id, so a replay reuses it. */
function scheduledInstanceId(procedureId: string): string {
  return `in_${createHash('sha256').update(procedureId).digest('base64url').slice(0, 16)}`;
}

/** Registers the instance procedures, run by `engine` (a later engine of the same process takes them over). */
export function registerInstanceProcedures(engine: InstanceEngine): void {
  const register = (definition: ReturnType<typeof operation>) => engine.runner.types.register(definition, { replace: true });
  register(
    operation(
      engine,
      'instance.start',
      async (engine, state, ctx) => {
        if (!state.instanceId) {
          // A scheduled start: check like the API does, then create the instance row under a derived id.
          const workflow = await requireWorkflow(engine.database, state.tenantId, state.workflowId);
          const version = (state.version as number | undefined) ?? workflow.currentVersion;
          // Schedules saved before the option existed have none: the start's default.
          const reentry = (state.reentry as Reentry | undefined) ?? 'exclude';
          const instanceId = scheduledInstanceId(ctx.procedureId);
          if (!(await engine.database.db.instance.findUnique({ where: { id: instanceId, tenantId: state.tenantId } }))) {
            const definition = await loadDefinition(engine.database, state.tenantId, workflow.id, version);
            const crowd = await requireScheduledCrowd(engine.database, workflow, state.tenantId, state.crowd as string);
            await refuseActive(engine.database, state.tenantId, workflow.id);
            // A firing that exclusion leaves without users starts nothing; it is not a failure (a weekly schedule over
            // a fixed crowd meets it every week after the first), so it is recorded like a firing skipped while running.
            const excludedCount = definition.entry ? null : await excludedEveryone(engine.database, state.tenantId, workflow.id, crowd, reentry);
            if (excludedCount !== null) return { kind: 'done', output: { skipped: 'nobody left', crowd: crowd.name, excludedCount, reentry } };
            await engine.database.db.instance.create({
              data: {
                id: instanceId,
                tenantId: state.tenantId,
                workflowId: workflow.id,
                version,
                crowdName: state.crowd as string,
                state: 'starting',
                userCount: 0,
                reentry,
              },
            });
          }
          Object.assign(state, { instanceId, version });
          return { kind: 'executing' };
        }
        await refuseActive(engine.database, state.tenantId, state.workflowId, state.instanceId);
        // Run again after a failure (a retry): the rollback left the instance failed; it is starting again.
        await engine.database.db.instance.updateMany({
          where: { id: state.instanceId, tenantId: state.tenantId, state: 'failed' },
          data: { state: 'starting' },
        });
        return { kind: 'done', output: await engine.materializeStart(state.tenantId, state.instanceId) };
      },
      async (state) => {
        if (state.instanceId)
          await engine.database.db.instance.updateMany({
            where: { id: state.instanceId, tenantId: state.tenantId, state: 'starting' },
            data: { state: 'failed' },
          });
      },
    ),
  );
  register(
    operation(
      engine,
      'instance.stop',
      async (engine, state) => {
        // Marked again on a retry (a failed stop put the instance back to running).
        await engine.database.db.instance.updateMany({
          where: { id: state.instanceId!, tenantId: state.tenantId, state: 'running' },
          data: { state: 'stopping' },
        });
        return { kind: 'done', output: await engine.materializeStop(state.tenantId, state.instanceId!) };
      },
      // The stop commits in one transaction: when it failed nothing was stopped, so the instance runs on, never left
      // stopping with nothing to finish it.
      async (state) =>
        void (await engine.database.db.instance.updateMany({
          where: { id: state.instanceId!, tenantId: state.tenantId, state: 'stopping' },
          data: { state: 'running' },
        })),
    ),
  );
  register(
    operation(engine, 'instance.update-crowd', async (engine, state) => {
      return { kind: 'done', output: await engine.materializeUpdateCrowd(state.tenantId, state.instanceId!, state.crowd as string) };
    }),
  );
  register(
    operation(engine, 'instance.update-workflow', async (engine, state) => {
      const mapping = (state.mapping ?? {}) as Record<string, string>;
      return { kind: 'done', output: await engine.materializeUpdateWorkflow(state.tenantId, state.instanceId!, state.version as number, mapping) };
    }),
  );
}
