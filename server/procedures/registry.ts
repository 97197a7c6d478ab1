import type { ProcedureTypeDefinition } from './types';

// Procedure types register once per app (the engine registers its types when it is created, before boot starts the
// runner): the table belongs to the runner that runs them (`runner.types`, built with it by server/create-app.ts).
// A stored procedure whose type is not registered waits until it is, so registration order never loses work.

export const DEFAULT_MAX_RETRIES = 3;

export class ProcedureTypes {
  private readonly byName = new Map<string, ProcedureTypeDefinition>();

  /**
   * Registers a procedure type; a second registration of the same type name is an error unless `replace` says the new
   * definition takes over (the engine's types are bound to the engine that registers them, and a test that restarts
   * the engine binds them to the new one).
   */
  register(definition: ProcedureTypeDefinition, options: { replace?: boolean } = {}): void {
    if (!/^[a-z][a-z0-9_.-]*$/i.test(definition.type)) throw new Error(`Invalid procedure type name "${definition.type}"`);
    if (this.byName.has(definition.type) && !options.replace) throw new Error(`Procedure type "${definition.type}" is already registered`);
    this.byName.set(definition.type, definition);
  }

  get(type: string): ProcedureTypeDefinition | undefined {
    return this.byName.get(type);
  }

  has(type: string): boolean {
    return this.byName.has(type);
  }

  /** What each type holds between procedures, released when the runner stops (nothing of them runs then). */
  close(): void {
    for (const definition of this.byName.values()) definition.close?.();
  }
}
