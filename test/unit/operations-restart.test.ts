import { afterEach, describe, expect, it } from 'vitest';
import { app } from '../../server/app';
import { Engine } from '../../server/engine/engine';
import { createProcedureRunner } from '../../server/procedures/runner';
import { database } from '../helpers/app-db';
import type { ProcedureView } from '../../server/procedures/types';
import { holdPartitions, instanceState, releasePartitions, tenantWithWorkflow, until } from '../fixtures/operations/setup';
import { processState, startServerProcess, type ServerProcess } from '../helpers/server-process';

// Operations issued right after a server restart, with real server processes: they must wait for the partitions the
// new process is taking over (a retry-later condition with its own deadline), never fail in the first seconds.

const servers: ServerProcess[] = [];
afterEach(() => servers.splice(0).forEach((server) => server.close()));

// This process only submits (inserts procedure rows) and reads; the server processes run everything.
const runner = createProcedureRunner(database(), { owner: 'test-submitter', pollMs: 20 });
const submitter = new Engine({ database: database(), ingestState: app().state, runner });

function server(): ServerProcess {
  const started = startServerProcess();
  servers.push(started);
  return started;
}

const finished = (id: string) => runner.await(id, 30_000);

describe('operations right after a restart (real processes)', () => {
  it('a stop issued right after a SIGKILL and restart completes at once: a killed, unreaped predecessor holds nothing', async () => {
    const { tenantId, workflowId } = await tenantWithWorkflow();
    const first = server();
    await first.ready;
    const started = await submitter.startInstance(tenantId, workflowId, { crowd: 'crowd' });
    expect((await finished(started.procedureId)).state).toBe('done');

    first.kill();
    await until(
      async () => processState(first.pid),
      (state) => state === 'Z',
      'the killed server to be a zombie',
    );
    const second = server();
    await second.ready;
    const stop = await submitter.stopInstance(tenantId, started.instanceId);
    const stopped = await finished(stop.procedureId);
    expect(stopped).toMatchObject({ state: 'done', attempts: 0, error: null, output: { instanceId: started.instanceId, state: 'stopped', total: 100 } });
    expect(await instanceState(started.instanceId)).toBe('stopped');
  });

  it('a start needing partitions another live process holds waits for them, showing attempts, next attempt and since when, then completes', async () => {
    const { tenantId, workflowId } = await tenantWithWorkflow();
    await holdPartitions(tenantId);
    const restarted = server();
    await restarted.ready;
    const started = await submitter.startInstance(tenantId, workflowId, { crowd: 'crowd' });
    const waiting = await until(
      async () => (await runner.get(started.procedureId))!,
      (view) => view.attempts >= 2,
      'a second attempt',
    );
    expect(waiting).toMatchObject({ state: 'retrying', error: `waiting for partitions 0, 1, 2, 3 of tenant ${tenantId}: not owned by this process yet` });
    expect(waiting.waitingSince).not.toBeNull();
    expect(Date.parse(waiting.nextAttemptAt!)).toBeGreaterThan(Date.parse(waiting.waitingSince!));
    expect(await instanceState(started.instanceId)).toBe('starting');

    // The holder hands them over: the waiting start goes on and completes.
    await releasePartitions(tenantId);
    const done: ProcedureView = await finished(started.procedureId);
    expect(done).toMatchObject({ state: 'done', error: null, waitingSince: null, output: { instanceId: started.instanceId, userCount: 100 } });
    expect(await instanceState(started.instanceId)).toBe('running');
  });
});
