// Request latency as a client on the same machine sees it: sequential GETs over ONE kept-alive connection with
// node:http. fetch (undici) adds a client-side tail of its own (p99 ≈ 5 ms against a bare server here), which would
// hide the server's; the floor below is the same client against a bare node:http server, measured in the same run.
import http from 'node:http';
import { median, percentile } from './report';

export interface Latency {
  p50Ms: number;
  p99Ms: number;
}

function getter(baseUrl: string, headers: Record<string, string>) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return (path: string) =>
    new Promise<string>((resolve, reject) => {
      const request = http.get(`${baseUrl}${path}`, { agent, headers }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${path}: ${response.statusCode} ${body}`))));
      });
      request.on('error', reject);
    });
}

/** `reads` sequential GETs after 10 warm-up ones; `check` sees every body. */
export async function measureGets(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  reads: number,
  check: (body: string) => void = () => undefined,
): Promise<Latency> {
  const get = getter(baseUrl, headers);
  const samples: number[] = [];
  for (let i = 0; i < reads + 10; i++) {
    const started = performance.now();
    const body = await get(path);
    if (i >= 10) samples.push(performance.now() - started);
    check(body);
  }
  return { p50Ms: median(samples), p99Ms: percentile(samples, 99) };
}

/** The same client against a bare node:http server answering a fixed JSON body: what no server can beat. */
export async function clientFloor(reads: number, body: string): Promise<Latency> {
  const server = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    return await measureGets(`http://127.0.0.1:${port}`, '/', {}, reads);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
