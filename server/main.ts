// The server process: a Next.js custom server (https://nextjs.org/docs/app/guides/custom-server). It boots the
// runtime (migrations, engine, procedures), owns the HTTP server, answers what must not wait for Next's router
// (server/http/http-server.ts) and hands every other request to Next's handler.
//
//   node --import tsx server/main.ts [-p PORT] [-H HOST] [--dev]      (npm start / npm run dev)
import { createServer } from 'node:http';
import { spawnEngineThreadEarly } from './engine/thread-spawn';
import { parseEnv } from './env';

/** Idle time a kept-alive connection waits for its next request (as common load balancers do: above their 60 s). */
const KEEP_ALIVE_MS = 65_000;
/**
 * How long one request may take to arrive whole. Node's default (5 min) answered a 408 to a 10M-profile import on
 * PostgreSQL (the body is read as fast as its chunks commit, ≈ 5 min there) and would to any big upload over a slow
 * link; headers must still come within headersTimeout, so an idle half-open request does not hold a socket long.
 */
const REQUEST_BODY_MS = 60 * 60_000;

interface Options {
  port: number;
  hostname: string | undefined;
  dev: boolean;
}

function parseArguments(args: string[]): Options {
  const options: Options = { port: Number(process.env.PORT ?? 3000), hostname: process.env.HOSTNAME, dev: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-p' || arg === '--port') options.port = Number(args[++i]);
    else if (arg === '-H' || arg === '--hostname') options.hostname = args[++i];
    else if (arg === '--dev') options.dev = true;
    else throw new Error(`Unknown argument ${arg} (expected -p PORT, -H HOST, --dev)`);
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) throw new Error(`Invalid port ${options.port}`);
  return options;
}

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  // As `next start` / `next dev` do: React and Next pick their production or development builds by it.
  (process.env as Record<string, string | undefined>).NODE_ENV ??= options.dev ? 'development' : 'production';
  // Loading the engine's sources is the longest part of a boot: the engine thread does it on the other core while
  // this thread loads the rest (so they are imported only now).
  // The process's environment, parsed once here: the engine thread and the request thread's app are built by it.
  const env = parseEnv();
  const engineThread = spawnEngineThreadEarly(env);
  const [{ boot }, { getCounts }, { postEvents }, { postCrowd, putCrowd }, { postProfileImport }, { crowdflowRequestListener }] = await Promise.all([
    import('./boot'),
    import('./http/counts-route'),
    import('./http/events-route'),
    import('./http/crowd-upload-route'),
    import('./http/profile-import-route'),
    import('./http/http-server'),
  ]);
  // tsx turns Node's source maps on for every module loaded after it, so Node read and parsed the map of each of
  // Next's files and of every chunk of the build (≈ 600 maps, a third of the request thread's boot CPU). Our sources
  // keep theirs (imported above); Next and the build's chunks load without them, as under `next start`.
  process.setSourceMapsEnabled(false);
  // Next loads and prepares while the runtime boots and after the server listens (its modules are most of a boot's
  // CPU): the routes this server answers itself (counts, events, uploads) serve at once, the pages and Next's API routes once
  // it is ready (their requests wait for it).
  const startedAt = performance.now();
  const nextReady = (async () => {
    const { default: next } = await import('next');
    const app = next({ dev: options.dev, dir: process.cwd(), hostname: options.hostname, port: options.port });
    await app.prepare();
    return { app, handle: app.getRequestHandler(), readyMs: Math.round(performance.now() - startedAt) };
  })();
  // A server whose pages cannot load is not serving: it exits, as it did when that failed before it listened.
  nextReady.catch((error: unknown) => {
    console.error('[crowdflow] the server could not start:', error);
    process.exit(1);
  });
  const crowd = '/api/v1/tenants/:tenant/crowds/:name';
  const direct = [
    { method: 'GET', path: '/api/v1/tenants/:tenant/instances/:iid/counts', handler: getCounts },
    { method: 'POST', path: '/api/v1/events', handler: postEvents },
    { method: 'POST', path: crowd, handler: postCrowd },
    { method: 'PUT', path: crowd, handler: putCrowd },
    { method: 'POST', path: '/api/v1/tenants/:tenant/profiles/import', handler: postProfileImport },
  ] as const;
  const server = createServer(crowdflowRequestListener([...direct], async (request, response) => (await nextReady).handle(request, response)));
  // Clients keep an idle connection until just before the server's advertised timeout (undici and Node's agent take
  // the `Keep-Alive: timeout` hint less a margin); with Node's 5 s, connections of a client pausing a few seconds
  // expired while its next request was on the way ("other side closed"). Longer idle connections make that rare.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  server.requestTimeout = REQUEST_BODY_MS;
  // After the runtime has handed back its leases (server/shutdown.ts runs first), stop taking requests and exit.
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    process.once(signal, () => {
      server.close();
      server.closeAllConnections();
      process.exit(code);
    });
  }
  // Each phase's time is logged so a slow boot says where it went.
  const { phases, running } = await boot(env, engineThread);
  await new Promise<void>((resolve) => server.listen(options.port, options.hostname, resolve));
  const address = server.address();
  const where = typeof address === 'object' && address ? `http://${options.hostname ?? 'localhost'}:${address.port}` : String(address);
  console.log(`[crowdflow] listening on ${where}${options.dev ? ' (development)' : ''} ${sinceStart()} (${spent(phases)})`);
  void nextReady.then(({ app, readyMs }) => {
    if (options.dev) server.on('upgrade', app.getUpgradeHandler());
    console.log(`[crowdflow] pages ready ${sinceStart()} (Next loaded and prepared in ${readyMs} ms)`);
  });
  // A server whose engine cannot start is not serving: it exits, as it did when that failed before it listened.
  const started = await running.catch((error: unknown) => {
    console.error('[crowdflow] the server could not start:', error);
    process.exit(1);
  });
  if (Object.keys(started).length > 0) console.log(`[crowdflow] engine and procedures running ${sinceStart()} (${spent(started)})`);
}

const sinceStart = () => `${Math.round(process.uptime() * 1000)} ms after the process started`;

function spent(phases: Record<string, number>): string {
  return Object.entries(phases)
    .map(([name, ms]) => `${name} ${ms} ms`)
    .join(', ');
}

main().catch((error: unknown) => {
  console.error('[crowdflow] the server could not start:', error);
  process.exit(1);
});
