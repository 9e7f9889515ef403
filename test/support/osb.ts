/**
 * Talking OSB to a broker of the end-to-end tests: a client with the test credentials, the body of
 * a provision request, and polling last_operation until the operation has settled.
 */
import { CREDENTIALS } from './system.js';
import { eventually } from './env.js';

export interface OsbResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export type OsbClient = (
  method: string,
  pathAndQuery: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<OsbResponse>;

/** An OSB client for the broker at `url`. */
export function osbClient(
  url: string,
  version = '2.17',
  credentials: { readonly username: string; readonly password: string } = CREDENTIALS,
): OsbClient {
  const auth = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  return async (
    method: string,
    pathAndQuery: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<OsbResponse> => {
    const response = await fetch(`${url}${pathAndQuery}`, {
      method,
      headers: {
        Authorization: auth,
        'X-Broker-API-Version': version,
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { raw: text };
    }
    return { status: response.status, body: parsed, headers: response.headers };
  };
}

/** The body of a provision request for `planId` of `serviceId`. */
export const provisionBody = (
  serviceId: string,
  planId: string,
  parameters: Record<string, unknown> = {},
) => ({
  service_id: serviceId,
  plan_id: planId,
  organization_guid: 'org',
  space_guid: 'space',
  parameters,
});

/**
 * Polls `path` (a last_operation URL) until the operation is no longer `in progress`, and returns
 * that last answer.
 */
export function untilSettled(osb: OsbClient, path: string, timeoutMs = 60_000): Promise<OsbResponse> {
  return eventually(
    `${path} to settle`,
    async () => {
      const res = await osb('GET', path);
      return res.body.state === 'in progress' ? undefined : res;
    },
    timeoutMs,
  );
}

/**
 * Provisions `instanceId` asynchronously with `body` (the broker must accept it, 202) and waits for
 * the operation to settle; returns its last_operation answer.
 */
export async function provisionSettled(
  osb: OsbClient,
  instanceId: string,
  body: unknown,
  timeoutMs = 60_000,
): Promise<OsbResponse> {
  const accepted = await osb('PUT', `/v2/service_instances/${instanceId}?accepts_incomplete=true`, body);
  expect(accepted.status).toBe(202);
  return untilSettled(
    osb,
    `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    timeoutMs,
  );
}
