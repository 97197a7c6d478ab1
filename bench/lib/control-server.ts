// The control of a latency measurement: a bare node:http server in a child process of its own, answering every
// request (after reading its body) with a small fixed JSON. Probed beside the server under test at the same moments,
// it shows what the machine's load alone does to a request: the share of a tail that is not the server's.
import { spawn } from 'node:child_process';
import { undoOnInterrupt } from './cleanup';

const CONTROL_SOURCE = `
const http = require('node:http');
const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(request.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
    response.end('{"steps":{"wait":3},"total":3}');
  });
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

export interface ControlServer {
  baseUrl: string;
  stop(): Promise<void>;
}

export async function startControlServer(): Promise<ControlServer> {
  const child = spawn(process.execPath, ['-e', CONTROL_SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = undoOnInterrupt(async () => void child.kill('SIGKILL'));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (data: Buffer) => resolve(Number(String(data).trim())));
    child.once('exit', (code) => reject(new Error(`the control server exited (${code})`)));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    async stop() {
      forget();
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
