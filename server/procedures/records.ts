import type { Clock } from '../clock';
import { badRequest, conflict } from '../errors';
import type { Db } from '../storage/db';
import { conflictingKeys, normalizeLockKeys } from './locks';
import type { NewProcedure, ProcedureRow } from './store';
import type { Json, LockKey, ProcedureInstance } from './types';

// New procedure rows, submitted or suspended into: lock keys normalized, and creation times strictly increasing within
// a process, because creation order is the lock queue's order.

export class ProcedureRecords {
  private lastCreatedMs = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  create(instance: ProcedureInstance, what: { id: string; type: string; state: Json }, parent: ProcedureRow | null): NewProcedure {
    let lockKeys: LockKey[];
    try {
      lockKeys = normalizeLockKeys(instance.lockKeys());
    } catch (error) {
      throw badRequest(`Procedure ${what.id}: ${errorMessage(error)}`);
    }
    this.lastCreatedMs = Math.max(this.clock.now(), this.lastCreatedMs + 1);
    return {
      id: what.id,
      type: what.type,
      parentId: parent?.id ?? null,
      tenantId: parent?.tenantId ?? null,
      workflowId: parent?.workflowId ?? null,
      lockKeys,
      data: instance.state(),
      createdAt: new Date(this.lastCreatedMs),
    };
  }

  /** Refuses a child whose lock keys conflict with its parent's (or any ancestor's): it could never run. */
  async refuseConflictWithAncestors(child: NewProcedure, parent: ProcedureRow): Promise<void> {
    for (
      let ancestor: ProcedureRow | null = parent;
      ancestor;
      ancestor = ancestor.parentId ? await this.db.procedure.findUnique({ where: { id: ancestor.parentId } }) : null
    ) {
      const keys = conflictingKeys(child.lockKeys, JSON.parse(ancestor.lockKeys) as LockKey[]);
      if (keys.length)
        throw conflict(`Child procedure ${child.id} (${child.type}) conflicts with its ancestor ${ancestor.id} on lock keys: ${keys.join(', ')}`, { keys });
    }
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}
