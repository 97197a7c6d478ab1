import type { ProcedureTypeDefinition } from './types';

// Procedure types register once per process (the engine registers its types at import time, before boot starts the
// runner). A stored procedure whose type is not registered waits until it is, so registration order never loses work.
const globalKey = Symbol.for('crowdflow.procedureTypes');
const store = globalThis as unknown as Record<symbol, Map<string, ProcedureTypeDefinition> | undefined>;

function types(): Map<string, ProcedureTypeDefinition> {
  return (store[globalKey] ??= new Map());
}

export const DEFAULT_MAX_RETRIES = 3;

/** Registers a procedure type; a second registration of the same type name is an error. */
export function registerProcedureType(definition: ProcedureTypeDefinition): void {
  if (!/^[a-z][a-z0-9_.-]*$/i.test(definition.type)) throw new Error(`Invalid procedure type name "${definition.type}"`);
  if (types().has(definition.type)) throw new Error(`Procedure type "${definition.type}" is already registered`);
  types().set(definition.type, definition);
}

export function procedureType(type: string): ProcedureTypeDefinition | undefined {
  return types().get(type);
}

export function isProcedureTypeRegistered(type: string): boolean {
  return types().has(type);
}
