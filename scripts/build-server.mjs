// Compiles the server entry (server/main.ts) and the engine thread's entry (server/engine/thread.ts) into plain
// JavaScript beside Next's build, `<distDir>/crowdflow-server/`. Loading our TypeScript through tsx at every start was
// most of a boot: each of ~300 modules went through tsx's loader hooks on their own thread, and the main thread sat
// waiting for them (bench profile of the restart window). Packages stay in node_modules (`packages: 'external'`), so
// only our sources and the generated Prisma clients are bundled. Run after `next build`, which empties the folder.
import { build } from 'esbuild';
import { join } from 'node:path';

const SERVER_OUT_DIR = join(process.env.CROWDFLOW_DIST_DIR || '.next', 'crowdflow-server');

await build({
  entryPoints: { main: 'server/main.ts', 'engine-thread': 'server/engine/thread.ts' },
  outdir: SERVER_OUT_DIR,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  // One copy of the modules both entries share (the engine thread and the request thread each load what they use).
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  // server/engine/thread-spawn.ts starts the compiled engine thread instead of its sources when this is defined.
  define: { CROWDFLOW_ENGINE_THREAD_ENTRY: JSON.stringify('./engine-thread.mjs') },
  logLevel: 'warning',
});
