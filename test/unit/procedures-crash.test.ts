import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ProcedureView } from '../../server/procedures/types';
import { db } from '../helpers/app-db';

// Crash recovery with real processes: a worker runs a multi-step procedure on this test's database and is SIGKILLed
// between two steps; a second worker resumes it. The persisted records and the side-effect log must show that no
// committed step ran twice.

const dir = mkdtempSync(join(tmpdir(), 'crowdflow-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Worker {
  /** Resolves with the line once the worker prints HANG. */
  hung: Promise<string>;
  /** Resolves with the procedure the worker printed on exit. */
  result: Promise<ProcedureView>;
  kill(): Promise<void>;
}

function startWorker(env: Record<string, string>): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/procedures/crash-worker.ts'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stderr.on('data', (d) => (stderr += d));
  const hung = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      output += d;
      const line = output.split('\n').find((l) => l.startsWith('HANG '));
      if (line) resolve(line);
    });
    void exited.then((code) => reject(new Error(`worker exited (${code}) before hanging:\n${output}\n${stderr}`)));
  });
  hung.catch(() => undefined);
  const result = exited.then((code) => {
    const line = output.split('\n').find((l) => l.startsWith('RESULT '));
    if (code !== 0 || !line) throw new Error(`worker exited with ${code}:\n${output}\n${stderr}`);
    return JSON.parse(line.slice('RESULT '.length)) as ProcedureView;
  });
  result.catch(() => undefined); // a killed worker has no result; only a test awaiting it should see that
  return {
    hung,
    result,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function effects(file: string): string[] {
  return readFileSync(file, 'utf8').trim().split('\n');
}

async function persistedSteps(id: string): Promise<string[]> {
  const rows = await db().procedureStep.findMany({ where: { procedureId: id }, orderBy: { step: 'asc' } });
  return rows.map((row) => `${row.step}:${row.state}`);
}

describe('crash recovery with a real process', () => {
  it('a procedure killed between steps resumes in a new process; no committed step runs twice', async () => {
    const id = 'crash-execute';
    const file = join(dir, `${id}.log`);
    const first = startWorker({
      PROCEDURE_ID: id,
      EFFECTS_FILE: file,
      OWNER: 'node-a',
      HANG_EXECUTE: '3',
      SUBMIT_STATE: JSON.stringify({ steps: 5, n: 0, total: 0, undone: 0, failAtEnd: false }),
    });
    expect(await first.hung).toBe('HANG execute 3');
    await first.kill();
    const killed = await db().procedure.findUniqueOrThrow({ where: { id } });
    expect(killed).toMatchObject({ state: 'running', step: 3, owner: 'node-a' });
    expect(effects(file)).toEqual(['execute 0', 'execute 1', 'execute 2']);

    // The same node restarting resumes its own claims at once.
    const second = startWorker({ PROCEDURE_ID: id, EFFECTS_FILE: file, OWNER: 'node-a' });
    const result = await second.result;
    expect(result.state).toBe('done');
    expect(result.output).toEqual({ total: 10 + 20 + 30 + 40 + 50 });
    expect(result.step).toBe(5);
    expect(effects(file)).toEqual(['execute 0', 'execute 1', 'execute 2', 'execute 3', 'execute 4']);
    expect(await persistedSteps(id)).toEqual(['1:running', '2:running', '3:running', '4:running', '5:done']);
  });

  it('a procedure killed during its rollback is taken over by another process after the lease and keeps rolling back', async () => {
    const id = 'crash-rollback';
    const file = join(dir, `${id}.log`);
    const first = startWorker({
      PROCEDURE_ID: id,
      EFFECTS_FILE: file,
      OWNER: 'node-a',
      HANG_ROLLBACK: '1',
      SUBMIT_STATE: JSON.stringify({ steps: 3, n: 0, total: 0, undone: 0, failAtEnd: true }),
    });
    expect(await first.hung).toBe('HANG rollback 1');
    await first.kill();
    const killed = await db().procedure.findUniqueOrThrow({ where: { id } });
    expect(killed).toMatchObject({ state: 'rolling-back', step: 4, owner: 'node-a' });

    const second = startWorker({ PROCEDURE_ID: id, EFFECTS_FILE: file, OWNER: 'node-b', LEASE_MS: '300' });
    const result = await second.result;
    expect(result.state).toBe('failed');
    expect(result.error).toBe('final step failed');
    expect(result.data).toMatchObject({ n: 3, undone: 3 });
    expect(effects(file)).toEqual(['execute 0', 'execute 1', 'execute 2', 'rollback 0', 'rollback 1', 'rollback 2']);
    expect(await persistedSteps(id)).toEqual(['1:running', '2:running', '3:running', '4:rolling-back', '5:rolling-back', '6:failed']);
  });
});
