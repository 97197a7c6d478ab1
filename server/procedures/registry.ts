import { runtime } from '../runtime';
import type { ProcedureTypeDefinition } from './types';

// Procedure types register once per process (the engine registers its types when it is created, before boot starts
// the runner). A stored procedure whose type is not registered waits until it is, so registration order never loses
// work.
const types = () => runtime().procedureTypes;

export const DEFAULT_MAX_RETRIES = 3;

/**
 * Registers a procedure type; a second registration of the same type name is an error unless `replace` says the new
 * definition takes over (the engine's types are bound to the engine that registers them, and a test that restarts
 * the engine binds them to the new one).
 */
export function registerProcedureType(definition: ProcedureTypeDefinition, options: { replace?: boolean } = {}): void {
  if (!/^[a-z][a-z0-9_.-]*$/i.test(definition.type)) throw new Error(`Invalid procedure type name "${definition.type}"`);
  if (types().has(definition.type) && !options.replace) throw new Error(`Procedure type "${definition.type}" is already registered`);
  types().set(definition.type, definition);
}

export function procedureType(type: string): ProcedureTypeDefinition | undefined {
  return types().get(type);
}

export function isProcedureTypeRegistered(type: string): boolean {
  return types().has(type);
}
