// Compiles the server entry (server/main.ts) and the engine thread's entry (server/engine/thread.ts) into plain
// JavaScript beside Next's build, `<distDir>/crowdflow-server/`. Loading our TypeScript through tsx at every start was
// most of a boot: each of ~300 modules went through tsx's loader hooks on their own thread, and the main thread sat
// waiting for them (bench profile of the restart window). Run after `next build`, which empties the folder.
//
// Our sources, the generated Prisma clients and the pure-JavaScript packages below are bundled; every other package
// stays in node_modules (native addons, Prisma's runtime with its wasm beside it, Next). Node resolves, reads and
// compiles an ESM package file by file (zod alone is ~90 files), so bundling these cut the engine thread's module
// load from 415-473 to 347-365 ms of CPU (five loads of its chunks each, on a loaded 2-core machine), the first part
// of every restart's recovery.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SERVER_OUT_DIR = join(process.env.CROWDFLOW_DIST_DIR || '.next', 'crowdflow-server');
const BUNDLED_PACKAGES = ['zod', '@marcbachmann/cel-js', 're2js', 'cron-parser', 'cronstrue'];
const { dependencies = {}, devDependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
const external = Object.keys({ ...dependencies, ...devDependencies })
  .filter((name) => !BUNDLED_PACKAGES.includes(name))
  .flatMap((name) => [name, `${name}/*`]);

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
  external,
  // A bundled CommonJS package's require() of a Node module needs a require in the ESM chunk (cron-parser's of fs).
  banner: { js: "import { createRequire as createRequireOfChunk } from 'node:module'; const require = createRequireOfChunk(import.meta.url);" },
  sourcemap: 'linked',
  // server/engine/thread-spawn.ts starts the compiled engine thread instead of its sources when this is defined.
  define: { CROWDFLOW_ENGINE_THREAD_ENTRY: JSON.stringify('./engine-thread.mjs') },
  logLevel: 'warning',
  plugins: [requiredAsCommonJs(['@prisma/client/runtime/client'])],
});

/**
 * Loads these CommonJS packages with require() rather than import: Node's import of a CommonJS file first lexes its
 * whole source for the names it exports (~40 ms of each boot for Prisma's 2 MB runtime, profiled).
 */
function requiredAsCommonJs(names) {
  const filter = new RegExp(`^(${names.map((name) => name.replace(/[/.]/g, '\\$&')).join('|')})$`);
  return {
    name: 'required-as-commonjs',
    setup(build) {
      build.onResolve({ filter }, (args) =>
        args.namespace === 'required-as-commonjs' ? { path: args.path, external: true } : { path: args.path, namespace: 'required-as-commonjs' },
      );
      build.onLoad({ filter: /.*/, namespace: 'required-as-commonjs' }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(args.path)});`,
        loader: 'js',
      }));
    },
  };
}
