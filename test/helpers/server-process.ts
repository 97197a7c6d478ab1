import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

// Real server processes for the operation tests (test/fixtures/operations/server-process.ts). Each runs under a parent
// shell that never reaps it, like a supervisor that does not wait: once SIGKILLed it stays a zombie, whose pid still
// answers kill(pid, 0), the case that made a restarted server wait out its predecessor's leases.

export interface ServerProcess {
  pid: number;
  /** Resolves once the server printed READY (engine and runner started). */
  ready: Promise<void>;
  output(): string;
  kill(): void;
  /** Ends the parent shell too (reaping the zombie). */
  close(): void;
}

export function startServerProcess(env: Record<string, string> = {}): ServerProcess {
  const parent: ChildProcess = spawn(
    'sh',
    ['-c', '"$0" --import tsx test/fixtures/operations/server-process.ts & echo "PID $!"; exec sleep 100000', process.execPath],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let pid = 0;
  parent.stderr!.on('data', (d) => (output += d));
  const ready = new Promise<void>((resolve, reject) => {
    parent.stdout!.on('data', (d) => {
      output += d;
      pid ||= Number(/PID (\d+)/.exec(output)?.[1] ?? 0);
      if (output.includes('READY')) resolve();
    });
    parent.once('exit', () => reject(new Error(`server process ended before READY:\n${output}`)));
  });
  ready.catch(() => undefined);
  const server: ServerProcess = {
    get pid() {
      return pid;
    },
    ready,
    output: () => output,
    kill() {
      if (pid) process.kill(pid, 'SIGKILL');
    },
    close() {
      try {
        if (pid) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      parent.kill('SIGKILL');
    },
  };
  return server;
}

/** The process state letter from /proc (Z: a zombie, killed but not reaped). */
export function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}
