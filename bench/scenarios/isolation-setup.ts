// What the isolation section (issue 34) needs before its phases: tenant B (a 3-user instance, the one whose calls are
// measured) and tenant A (the busy one) with its limits raised for a 2^27-user instance and a timer firing every
// second, N profiles, a big instance to export, a regex workflow over 1,000 users and a profile-timer workflow.
import { BRANCH_JOURNEY, denseBitmap } from '../lib/data';
import { ApiError, BENCH_ADMIN_TOKEN, call, download, startInstance, workflow, type BenchServer } from '../lib/server';
import { postPieces, profileStream } from './profiles';

export const A = 'busy-a';
export const B = 'probe-b';

/** Over the cost budget at every route (15 nested `all` over a 3-item list: ≈ 122M units, issue 34's first case). */
export const COSTLY_CONDITION = Array.from({ length: 15 }, (_, depth) => `[0,1,2].all(x${14 - depth}, `).join('') + 'true' + ')'.repeat(15);

/**
 * Within the budget (1M units) at save, assuming strings of 1,024 characters: an unanchored counted repetition keeps
 * ~900 RE2 threads alive per character, the costliest kind of regex the budget lets through.
 */
export const REGEX_CONDITION = 'event.type == "msg" && event.data.s.matches(".{900}z")';
/** A string of that length that never matches: every event is evaluated to its end and the user stays. */
export const REGEX_SUBJECT = 'a'.repeat(1_000);
/** The regex workflow's users (0 … n−1). */
export const REGEX_USERS = 1_000;

export const PROFILE_TIMER_CONDITION = 'profile.plan == "pro"';

export interface IsolationSizes {
  /** log2 of the crowd A uploads and starts in phase (a). */
  startUsersLog2: number;
  exportUsers: number;
  profiles: number;
  importLines: number;
  /** How long each phase of fixed length lasts. */
  phaseMs: number;
}

export interface IsolationSetup {
  probeInstance: string;
  exportInstance: string;
  timerWorkflow: string;
  /** The workflow phase (a) starts over the big crowd. */
  hugeWorkflow: string;
}

const roaring = (users: number) => Buffer.from(denseBitmap(users).serialize('portable'));

export async function setUpIsolation(server: BenchServer, sizes: IsolationSizes): Promise<IsolationSetup> {
  for (const tenant of [A, B]) await call(server, 'POST', '/tenants', { name: tenant, partitions: 8 });
  const room = 2 ** (sizes.startUsersLog2 + 1);
  await call(server, 'PUT', `/tenants/${A}/limits`, { maxCrowdUsers: room, maxInstanceUsers: room, minTimerPeriodSeconds: 1 });

  await call(server, 'PUT', `/tenants/${B}/crowds/few`, '1\n2\n3\n', 'text/plain');
  const probeInstance = await startInstance(server, B, await workflow(server, B, 'probe', BRANCH_JOURNEY), 'few');

  console.log(`  tenant A: a ${sizes.exportUsers.toLocaleString('en-US')}-user instance, ${sizes.profiles.toLocaleString('en-US')} profiles…`);
  await call(server, 'PUT', `/tenants/${A}/crowds/all`, roaring(sizes.exportUsers), 'application/octet-stream');
  const exportInstance = await startInstance(server, A, await workflow(server, A, 'export', BRANCH_JOURNEY), 'all');
  await call(server, 'PUT', `/tenants/${A}/crowds/profiled`, roaring(sizes.profiles), 'application/octet-stream');
  await importProfiles(server, await piecesOf(profileStream(sizes.profiles)));

  await call(server, 'PUT', `/tenants/${A}/crowds/chatty`, roaring(REGEX_USERS), 'application/octet-stream');
  const regex = {
    steps: [
      { name: 'wait', kind: 'branch', branches: [{ condition: REGEX_CONDITION, next: 'matched' }] },
      { name: 'matched', kind: 'direct' },
    ],
  };
  await startInstance(server, A, await workflow(server, A, 'regex', regex), 'chatty');
  const timerWorkflow = await workflow(server, A, 'profile timer', {
    steps: [
      { name: 'wait', kind: 'timer', cron: '* * * * * *', condition: PROFILE_TIMER_CONDITION, next: 'done' },
      { name: 'done', kind: 'direct' },
    ],
  });

  // Each route's first call loads its modules: a cost of the server's first minute, not of what A does.
  await call(server, 'GET', `/tenants/${B}/instances/${probeInstance}/counts`);
  await call(server, 'POST', '/events', { tenant: B, events: [{ user: 1, type: 'view', data: {} }] });
  await call(server, 'POST', `/tenants/${A}/profiles`, [{ user: 0, attributes: { plan: 'free' } }]);
  await download(server, `/tenants/${A}/instances/${exportInstance}/steps/big/export?format=csv`);
  await call(server, 'POST', `/tenants/${A}/audience`, { condition: COSTLY_CONDITION }).then(
    () => console.log('  ! the costly audience was answered 2xx while warming up'),
    (error: unknown) => {
      if (!(error instanceof ApiError)) throw error;
    },
  );
  const hugeWorkflow = await workflow(server, A, 'huge', BRANCH_JOURNEY);
  return { probeInstance, exportInstance, timerWorkflow, hugeWorkflow };
}

/** The pieces of a streamed body, generated before a phase so that generating them is not timed. */
export async function piecesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const pieces: Uint8Array[] = [];
  const reader = stream.getReader();
  for (let piece = await reader.read(); !piece.done; piece = await reader.read()) pieces.push(piece.value);
  return pieces;
}

/** An NDJSON profile import into tenant A. */
export async function importProfiles(server: BenchServer, pieces: Uint8Array[]): Promise<void> {
  const response = await postPieces(
    `${server.baseUrl}/api/v1/tenants/${A}/profiles/import`,
    { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/x-ndjson' },
    pieces,
  );
  if (response.status !== 200) throw new Error(`profile import: ${response.status} ${response.text.slice(0, 300)}`);
}
