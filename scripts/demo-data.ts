// What the demo's seed (scripts/seed.ts) and its event trickle (scripts/trickle.ts) agree on: the tenant, the crowd
// and which user IDs are in it. CROWDFLOW_DEMO_USERS makes a smaller demo (the e2e test seeds 2,000 users).

export const DEMO_TENANT = process.env.CROWDFLOW_DEMO_TENANT ?? 'demo';
export const DEMO_CROWD = 'newsletter-subscribers';
export const DEMO_USERS = Number(process.env.CROWDFLOW_DEMO_USERS ?? 1_000_000);

/** The `index`-th user of the demo crowd: IDs spread over 0..4×DEMO_USERS, not one dense range. */
export const demoUser = (index: number) => index * 4 + (index % 3);

/** A JSON call to the server at `baseUrl` as the admin (CROWDFLOW_ADMIN_TOKEN). */
export function adminCall(baseUrl: string) {
  const token = process.env.CROWDFLOW_ADMIN_TOKEN;
  if (!token) throw new Error('CROWDFLOW_ADMIN_TOKEN is not set');
  return async (method: string, path: string, body?: BodyInit, contentType = 'application/json') => {
    const response = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': contentType } : {}) },
      body,
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit);
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  };
}
