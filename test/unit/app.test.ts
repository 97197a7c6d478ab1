import { describe, expect, it } from 'vitest';
import { app, registerApp } from '../../server/app';
import { ManualClock } from '../../server/clock';
import { createApp } from '../../server/create-app';
import { Engine } from '../../server/engine/engine';
import { runningLookupIn } from '../../server/workflows/running';
import { db, database } from '../helpers/app-db';

// The composition root (server/create-app.ts) and its one hand-over (server/app.ts).
describe('the app of a thread', () => {
  it('is read through app(), which throws while none is registered (nothing is built on first use)', () => {
    const fileApp = registerApp(undefined);
    try {
      expect(() => app()).toThrow(/No app is registered/);
      expect(() => database()).toThrow(/No app is registered/);
    } finally {
      registerApp(fileApp);
    }
    expect(app()).toBe(fileApp);
    expect(database()).toBe(fileApp?.database);
  });

  it('builds each part once, handing the clock, storage and runner to the engine it builds', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const fileApp = app();
    const built = createApp({ clock, storage: fileApp.storage, engine: 'in-process' });
    expect(built.storage).toBe(fileApp.storage);
    expect(built.engine).toBeInstanceOf(Engine);
    const engine = built.engine as Engine;
    expect(engine.clock).toBe(clock);
    expect(engine.database).toBe(built.database);
    expect(engine.runner).toBe(built.runner);
    // The engine registered its procedure types on the runner it was handed, not on another app's.
    expect(built.procedureTypes.has('instance.start')).toBe(true);
    expect(fileApp.procedureTypes.has('instance.start')).toBe(false);
    // The workflow views of the app that runs the engine read its live counts; the file's app, with no engine, has none.
    expect(runningLookupIn(built.database)).toBeDefined();
    expect(fileApp.engine).toBeUndefined();
    expect(runningLookupIn(fileApp.database)).toBeUndefined();
    // Storage handed in stays open when the app closes (its owner closes it).
    await built.close();
    expect(await db().tenant.count()).toBeGreaterThanOrEqual(0);
  });
});
