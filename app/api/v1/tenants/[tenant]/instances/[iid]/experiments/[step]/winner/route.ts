import { WinnerBody } from '@/server/http/experiment-api';
import { json, readJson } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const POST = tenantRoute<{ tenant: string; iid: string; step: string }>(async ({ tenant, request, engine, clock, audit }, params) => {
  const { path } = await readJson(request, WinnerBody);
  const sending = await engine.sendToWinner(tenant.id, params.iid, { step: params.step, path }, clock.now());
  await audit('experiment.winner', { target: params.iid, details: { step: params.step, path } });
  return json(sending, 202);
});
