// Webhook delivery of a bulk move: a 10M-user move (one journal row per partition, as a start or a timer writes it)
// into a step whose enter action names a destination, cut into batches and POSTed, signed, through the procedure
// runner to a quick local receiver in a child process (so its JSON parsing does not share our event loop). Timed from
// the moment the pump starts until the receiver has acknowledged every user id.
import { spawn, type ChildProcess } from 'node:child_process';
import { denseBitmap } from '../lib/data';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { updateTenantLimits } from '../../server/limits/limits';
import { createProcedureRunner } from '../../server/procedures/runner';
import { db, database as processDatabase } from '../../test/helpers/app-db';
import { createDestination, DEFAULT_BATCH_SIZE } from '../../server/webhooks/destinations';
import { WebhookPump } from '../../server/webhooks/pump';
import type { ScratchDatabase } from '../lib/database';
import type { Measured } from './journey';
import { closeApp, useDatabase } from './rows';
import { partitionOf, USER_BLOCK } from '../../server/engine/partitioning';

export interface WebhookFigures {
  /** Seconds from the pump's start until every user id was acknowledged. */
  seconds: Measured;
}

const PARTITIONS = 8;

/** Answers every POST with 204 after parsing it; counts distinct deliveries and their user ids; GET returns the counts. */
const RECEIVER = `
const http = require('node:http');
const seen = new Set(); let users = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') return res.end(JSON.stringify({ deliveries: seen.size, users }));
  const chunks = []; req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!seen.has(body.id)) { seen.add(body.id); for (const m of body.moves) users += m.users.length; }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

async function startReceiver(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (data: Buffer) => resolve(Number(String(data).trim())));
    child.once('exit', (code) => reject(new Error(`the receiver exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

export async function measureWebhooks(database: ScratchDatabase, users: number, batchSize = DEFAULT_BATCH_SIZE): Promise<WebhookFigures> {
  await useDatabase(database.url);
  const receiver = await startReceiver();
  try {
    await db().tenant.create({ data: { id: 'tn_bench', name: 'bench', partitions: PARTITIONS } });
    // The receiver is on this machine: a private address, refused unless the tenant is allowed them.
    await updateTenantLimits(processDatabase(), 'tn_bench', { webhookPrivateAddresses: true });
    await createDestination(
      processDatabase(),
      'tn_bench',
      { name: 'crm', url: `${receiver.url}/hook`, headers: {}, batchSize, timeoutMs: 10_000, allNotifications: false, start: 'head' },
      Date.now(),
    );
    const everyone = denseBitmap(users);
    const ids = everyone.toUint32Array();
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const part = new RoaringBitmap32(ids.filter((id) => partitionOf(id, { partitions: PARTITIONS, userBlock: USER_BLOCK }) === partition));
      await db().journal.create({
        data: {
          seq: BigInt(partition + 1),
          tenantId: 'tn_bench',
          instanceId: 'in_bench',
          partition,
          fromStep: null,
          toStep: 'notify',
          user: null,
          bitmap: serializeBitmap(part),
          count: BigInt(part.size),
          leaveAction: null,
          enterAction: 'webhook:crm',
          timeMs: BigInt(Date.now()),
        },
      });
    }
    const runner = createProcedureRunner(processDatabase(), { owner: 'bench-webhooks', pollMs: 50 });
    await runner.start();
    const pump = new WebhookPump({ database: processDatabase(), runner, pollMs: 50 });
    const started = performance.now();
    pump.start();
    let acknowledged = { deliveries: 0, users: 0 };
    while (acknowledged.users < users) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      acknowledged = (await (await fetch(receiver.url)).json()) as typeof acknowledged;
      if (performance.now() - started > 600_000) throw new Error(`only ${acknowledged.users} of ${users} user ids acknowledged after 600 s`);
    }
    const seconds = (performance.now() - started) / 1000;
    await pump.stop();
    await runner.stop();
    const failed = await db().webhookDelivery.count({ where: { status: { not: 'delivered' } } });
    const batch = batchSize.toLocaleString('en-US');
    console.log(
      `  ${users.toLocaleString('en-US')} users in ${acknowledged.deliveries} deliveries of ≤ ${batch} ids: ${seconds.toFixed(1)} s (${failed} not marked delivered yet)`,
    );
    return { seconds: { value: seconds, note: `(${acknowledged.deliveries} requests of ≤ ${batch} ids)` } };
  } finally {
    receiver.child.kill();
    await closeApp();
  }
}
