// The environment flows from the composition root (issue 35 §1): two apps built with different settings over the same
// storage answer by their own, with process.env untouched. The route wrappers read the registered app once per
// request, so each request below is answered by the app registered while it runs.
import { afterAll, describe, expect, it } from 'vitest';
import { app, registerApp, type App } from '../../server/app';
import { createApp } from '../../server/create-app';
import { parseEnv } from '../../server/env';
import { postCrowd } from '../../server/http/crowd-upload-route';
import { tenantRow } from '../helpers/tenant-row';

const fileApp = app();
const appWith = (adminToken: string, maxUploadBytes: number) =>
  createApp({
    storage: fileApp.storage,
    env: parseEnv({ CROWDFLOW_ADMIN_TOKEN: adminToken, CROWDFLOW_MAX_UPLOAD_BYTES: String(maxUploadBytes) }),
  });
const small = { token: 'admin-token-of-the-small-app', built: appWith('admin-token-of-the-small-app', 8) };
const large = { token: 'admin-token-of-the-large-app', built: appWith('admin-token-of-the-large-app', 1_024) };
const tenant = await tenantRow('AppEnv');

afterAll(async () => {
  await small.built.close();
  await large.built.close();
});

let crowds = 0;

/** Uploads `users` as a new crowd through `answering`, as `token`; answers the status and error code. */
async function upload(answering: App, token: string, users: number[]): Promise<{ status: number; code?: string; message?: string }> {
  const name = `crowd-${++crowds}`;
  const request = new Request(`http://localhost/api/v1/tenants/${tenant}/crowds/${name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
    body: users.join('\n'),
  });
  const registered = registerApp(answering);
  try {
    const response = await postCrowd(request, { params: Promise.resolve({ tenant, name }) });
    const body = (await response.json()) as { error?: { code: string; message: string } };
    return { status: response.status, code: body.error?.code, message: body.error?.message };
  } finally {
    registerApp(registered);
  }
}

describe('apps built with different environments', () => {
  it('each take their own admin token and refuse the other one', async () => {
    expect(await upload(small.built, small.token, [1])).toMatchObject({ status: 201 });
    expect(await upload(large.built, large.token, [1])).toMatchObject({ status: 201 });
    expect(await upload(small.built, large.token, [1])).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(await upload(large.built, small.token, [1])).toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('each refuse an upload over their own limit', async () => {
    const users = [1, 2, 3, 4, 5, 6]; // 11 bytes
    expect(await upload(small.built, small.token, users)).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      message: expect.stringMatching(/\b8 bytes/),
    });
    expect(await upload(large.built, large.token, users)).toMatchObject({ status: 201 });
  });

  it("leave the process environment to the app built by it: the test file's app takes neither token", async () => {
    expect(await upload(fileApp, small.token, [1])).toMatchObject({ status: 401 });
    expect(await upload(fileApp, large.token, [1])).toMatchObject({ status: 401 });
  });
});
