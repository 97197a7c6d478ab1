// What an interrupted run (Ctrl-C, kill) must still undo: stop the servers it started and drop its scratch databases.
const pending = new Set<() => Promise<void>>();

/** Registers `undo` until the returned function is called (when the work undid itself normally). */
export function undoOnInterrupt(undo: () => Promise<void>): () => void {
  pending.add(undo);
  return () => pending.delete(undo);
}

let installed = false;

export function installInterruptHandler(): void {
  if (installed) return;
  installed = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log(`\n${signal}: stopping servers and dropping scratch databases…`);
      void Promise.allSettled([...pending].map((undo) => undo())).then(() => process.exit(130));
    });
  }
}
