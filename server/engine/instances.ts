// Instance operations (busybee semantics). Each is checked up front for a clear 4xx, then runs as a durable
// procedure holding an exclusive lock on the workflow; the work itself happens in operations.ts under every
// partition lock of the tenant and commits in one transaction.
import { createHash } from 'node:crypto';
import { requireCrowdMeta } from '../crowd';
import { AppError, badRequest, conflict, notFound } from '../errors';
import { newId } from '../ids';
import { registerProcedureType } from '../procedures/registry';
import type { Json, ProcedureContext, ProcedureInstance, ProcedureStatus } from '../procedures/types';
import { db } from '../storage/db';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';
import type { Engine } from './engine';
import { loadDefinition } from './instance-store';
import { materializeStart, materializeStop, materializeUpdateCrowd, materializeUpdateWorkflow, strandedUsers } from './operations';
import { WorkflowRuntime } from './runtime';
import type { StartRequest, SubmittedOperation, UpdateWorkflowRequest } from './types';

export async function requireInstance(tenantId: string, instanceId: string) {
  const row = await db().instance.findFirst({ where: { id: instanceId, tenantId } });
  if (!row) throw notFound(`Instance "${instanceId}"`);
  return row;
}

async function requireWorkflow(tenantId: string, workflowId: string) {
  const row = await db().workflow.findFirst({ where: { id: workflowId, tenantId } });
  if (!row) throw notFound(`Workflow "${workflowId}"`);
  return row;
}

async function requireRunning(tenantId: string, instanceId: string) {
  const row = await requireInstance(tenantId, instanceId);
  if (row.state !== 'running') throw conflict(`Instance ${instanceId} is ${row.state}, not running`, { state: row.state });
  return row;
}

async function refuseActive(workflowId: string, except?: string): Promise<void> {
  const active = await db().instance.findFirst({ where: { workflowId, state: { in: ACTIVE_INSTANCE_STATES }, ...(except ? { id: { not: except } } : {}) } });
  if (active) throw conflict(`Workflow ${workflowId} already has an instance ${active.state} (${active.id}); stop it first`, { instanceId: active.id, state: active.state });
}

async function requireUsableCrowd(tenantId: string, name: string) {
  const crowd = await requireCrowdMeta(tenantId, name);
  if (crowd.count === 0) throw new AppError('unprocessable', `Crowd "${name}" is empty; an instance needs at least one user`, { crowd: name });
  return crowd;
}

/** Checks everything a start needs, then creates the instance row and submits `instance.start`. */
export async function submitStart(engine: Engine, tenantId: string, workflowId: string, request: StartRequest): Promise<SubmittedOperation> {
  const workflow = await requireWorkflow(tenantId, workflowId);
  const version = request.version ?? workflow.currentVersion;
  await loadDefinition(workflow.id, version);
  await requireUsableCrowd(tenantId, request.crowd);
  await refuseActive(workflow.id);
  const instanceId = newId('in');
  await db().instance.create({ data: { id: instanceId, tenantId, workflowId: workflow.id, version, crowdName: request.crowd, state: 'starting', userCount: 0 } });
  const state = { tenantId, workflowId: workflow.id, crowd: request.crowd, version, instanceId };
  const procedureId = await engine.runner.submit('instance.start', state, { tenantId, workflowId: workflow.id });
  return { procedureId, instanceId };
}

export async function submitStop(engine: Engine, tenantId: string, instanceId: string): Promise<SubmittedOperation> {
  const row = await requireInstance(tenantId, instanceId);
  if (row.state !== 'running' && row.state !== 'stopping') throw conflict(`Instance ${instanceId} is ${row.state}, not running`, { state: row.state });
  await db().instance.updateMany({ where: { id: instanceId, state: 'running' }, data: { state: 'stopping' } });
  const procedureId = await engine.runner.submit('instance.stop', { tenantId, instanceId, workflowId: row.workflowId }, { id: `instance.stop:${instanceId}`, tenantId, workflowId: row.workflowId });
  return { procedureId, instanceId };
}

export async function submitUpdateCrowd(engine: Engine, tenantId: string, instanceId: string, request: { crowd: string }): Promise<SubmittedOperation> {
  const row = await requireRunning(tenantId, instanceId);
  await requireUsableCrowd(tenantId, request.crowd);
  const procedureId = await engine.runner.submit('instance.update-crowd', { tenantId, instanceId, workflowId: row.workflowId, crowd: request.crowd }, { tenantId, workflowId: row.workflowId });
  return { procedureId, instanceId };
}

export async function submitUpdateWorkflow(engine: Engine, tenantId: string, instanceId: string, request: UpdateWorkflowRequest): Promise<SubmittedOperation> {
  const row = await requireRunning(tenantId, instanceId);
  const next = new WorkflowRuntime(await loadDefinition(row.workflowId, request.version));
  const mapping = request.mapping ?? {};
  for (const [from, to] of Object.entries(mapping)) {
    if (!next.steps.has(to)) throw badRequest(`mapping.${from}: step "${to}" is not in version ${request.version}`, { path: `mapping.${from}` });
  }
  const live = (await engine.tenant(tenantId)).instances.get(instanceId);
  if (live) {
    const stranded = strandedUsers(live, next, mapping);
    if (Object.keys(stranded).length) {
      throw conflict(`Users of steps removed in version ${request.version} would be stranded; map each removed step to a step of the new version`, { stranded });
    }
  }
  const state = { tenantId, instanceId, workflowId: row.workflowId, version: request.version, mapping };
  const procedureId = await engine.runner.submit('instance.update-workflow', state, { tenantId, workflowId: row.workflowId });
  return { procedureId, instanceId };
}

type OperationState = { tenantId: string; instanceId?: string; workflowId: string } & Record<string, Json | undefined>;

/** A one-step procedure over an instance of `engine` with an exclusive lock on its workflow. */
function operation(
  engine: Engine,
  type: string,
  run: (engine: Engine, state: OperationState, ctx: ProcedureContext) => Promise<ProcedureStatus>,
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
export function registerInstanceProcedures(engine: Engine): void {
  const register = (definition: ReturnType<typeof operation>) => registerProcedureType(definition, { replace: true });
  register(
    operation(
      engine,
      'instance.start',
      async (engine, state, ctx) => {
        if (!state.instanceId) {
          // A scheduled start: check like the API does, then create the instance row under a derived id.
          const workflow = await requireWorkflow(state.tenantId, state.workflowId);
          const version = (state.version as number | undefined) ?? workflow.currentVersion;
          const instanceId = scheduledInstanceId(ctx.procedureId);
          if (!(await db().instance.findUnique({ where: { id: instanceId } }))) {
            await loadDefinition(workflow.id, version);
            await requireUsableCrowd(state.tenantId, state.crowd as string);
            await refuseActive(workflow.id);
            await db().instance.create({ data: { id: instanceId, tenantId: state.tenantId, workflowId: workflow.id, version, crowdName: state.crowd as string, state: 'starting', userCount: 0 } });
          }
          Object.assign(state, { instanceId, version });
          return { kind: 'executing' };
        }
        await refuseActive(state.workflowId, state.instanceId);
        return { kind: 'done', output: await materializeStart(engine, state.tenantId, state.instanceId) };
      },
      async (state) => {
        if (state.instanceId) await db().instance.updateMany({ where: { id: state.instanceId, state: 'starting' }, data: { state: 'failed' } });
      },
    ),
  );
  register(
    operation(engine, 'instance.stop', async (engine, state) => {
      return { kind: 'done', output: await materializeStop(engine, state.tenantId, state.instanceId!) };
    }),
  );
  register(
    operation(engine, 'instance.update-crowd', async (engine, state) => {
      return { kind: 'done', output: await materializeUpdateCrowd(engine, state.tenantId, state.instanceId!, state.crowd as string) };
    }),
  );
  register(
    operation(engine, 'instance.update-workflow', async (engine, state) => {
      const mapping = (state.mapping ?? {}) as Record<string, string>;
      return { kind: 'done', output: await materializeUpdateWorkflow(engine, state.tenantId, state.instanceId!, state.version as number, mapping) };
    }),
  );
}
