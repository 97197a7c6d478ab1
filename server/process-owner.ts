// Lease owners (engine partitions, procedures) are named after the process holding them: host and pid. A restarted
// server is a new process, so without this it would wait out the leases its predecessor left behind; with the
// name it can tell that the holder was a process on this machine that no longer exists and take over at once.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** The owner name of this process's leases. */
export function processOwner(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * True when `owner` names a process on this host that is gone (its leases can be taken before they expire). Owners on
 * other hosts, other naming schemes (tests) and live processes are never judged gone.
 */
export function isDeadLocalOwner(owner: string | null | undefined): boolean {
  if (!owner) return false;
  const separator = owner.lastIndexOf(':');
  if (separator <= 0 || owner.slice(0, separator) !== hostname()) return false;
  const pid = Number(owner.slice(separator + 1));
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return isZombie(pid);
}

/**
 * A killed process whose parent has not reaped it yet (a supervisor that does not wait) still answers kill(pid, 0),
 * but it is a zombie: it holds nothing. Linux shows that as state Z in /proc; elsewhere it reads as alive.
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Format: "pid (comm) state …"; comm may contain spaces and parentheses, so read after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}
