/** The broker process: the OSB API over the Temporal client and the catalog watch. */
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type Koa from 'koa';
import type { Registry } from 'prom-client';
import { TemporalAdminService } from '../broker/admin.js';
import { TemporalServiceBroker, brokerParts, type BrokerDeps } from '../broker/service.js';
import { CODEC_TOKEN_RULE, ConfigError, isCodecToken, type Config } from '../config.js';
import type { ClusterClient } from '../kube/clients.js';
import { startCatalogCache } from '../kube/catalog-cache.js';
import { startCodecServer } from '../temporal/codec-server.js';
import { connectClient, payloadCodec } from '../temporal/connection.js';
import { createApp } from '../api/app.js';
import { subjectRdns, type SubjectRdns } from '../api/client-subject.js';
import { answerClientError } from '../api/client-errors.js';
import type { Logger } from '../log.js';
import { brokerMetrics } from '../metrics/prometheus.js';
import { adminConfigured, rotatingCredentials, rotatingSecret } from './secret-files.js';

import type { Tracing } from '../tracing.js';

/** Where the broker's metrics go and how its readiness is told (see monitoring.ts). */
export interface BrokerMonitoring {
  readonly registry: Registry;
  readiness(check: () => boolean): void;
}

/**
 * Starts the OSB API: its Temporal client, its catalog watch and the HTTP server; and the codec
 * endpoint on its own port, when configured. With
 * `monitoring`, it counts its requests and operations there, and is ready from the moment its
 * catalog is synced and it serves until it starts stopping. With `tracing`, each request is a span.
 */
export async function startBroker(
  config: Config,
  master: ClusterClient,
  log: Logger,
  monitoring?: BrokerMonitoring,
  tracing?: Tracing,
): Promise<{ url: string; stop(delayMs?: number): Promise<void> }> {
  // First: a client subject or credential files that cannot be read stop the broker before it
  // connects to anything.
  const clientSubject = osbClientSubject(config.broker.osbAuth);
  const fileOptions = { log, overlapMs: config.credentialOverlapMs };
  const credentials = rotatingCredentials(config.broker.credentials, fileOptions);
  const adminSettings = config.broker.admin;
  // Never the OSB API's: a platform's credentials must not reach the admin API.
  const adminCredentials = adminConfigured(adminSettings)
    ? rotatingCredentials(adminSettings, {
        ...fileOptions,
        check: (admin) =>
          credentials().some((osb) => osb.username === admin.username && osb.password === admin.password)
            ? 'the admin credentials must differ from the OSB credentials'
            : undefined,
      })
    : () => [];
  const codecEndpoint = config.codec && {
    ...config.codec,
    tokens: rotatingSecret(config.codec.token, {
      ...fileOptions,
      check: (token) => (isCodecToken(token) ? undefined : `the token must be ${CODEC_TOKEN_RULE}`),
    }),
  };
  const { client, close } = await connectClient(config.temporal, tracing?.clientInterceptors);
  const catalog = await startCatalogCache(master, config.namespace, (err) =>
    log.warn('catalog watch failed; restarting', { error: String(err) }),
  );
  const metrics = monitoring && brokerMetrics(monitoring.registry, catalog);
  const brokerDeps: BrokerDeps = {
    client,
    taskQueue: config.temporal.taskQueue,
    master,
    catalog,
    ...(config.instanceNamespace ? { instanceNamespace: config.instanceNamespace } : {}),
    syncTimeoutMs: config.broker.syncTimeoutMs,
    operationTimeoutSeconds: config.operationTimeoutSeconds,
    ...(config.statusPollMs ? { statusPollMs: config.statusPollMs } : {}),
    // One digest key for each payload key, in their order: a repeat is recognised whichever of
    // them its first request was digested under.
    hashKeys: config.temporal.payloadKeys.map(({ key }) =>
      createHash('sha256').update('request-digest').update(key).digest(),
    ),
    ...(metrics ? { metrics } : {}),
    ...(config.quotaWebhook ? { entitlements: config.quotaWebhook } : {}),
    onEntitlementUnanswered: (reason) =>
      log.warn('the entitlement service gave no answer; its failure policy lets the request pass', {
        reason,
      }),
  };
  const broker = new TemporalServiceBroker(brokerDeps);
  const admin = new TemporalAdminService(brokerParts(brokerDeps), {
    namespace: config.namespace,
    masterClusterId: config.masterClusterId,
    log,
  });
  let stopping = false;
  const app = createApp({
    broker,
    catalog,
    credentials,
    ...(clientSubject ? { clientSubject } : {}),
    sendBindingMetadata: config.broker.sendBindingMetadata,
    maxBodyBytes: config.broker.maxBodyBytes,
    log,
    stopping: () => stopping,
    ...(metrics ? { requests: metrics } : {}),
    ...(tracing ? { tracer: tracing.tracer } : {}),
    admin: { service: admin, credentials: adminCredentials },
  });
  const codec = codecEndpoint
    ? await startCodecServer({
        ...codecEndpoint,
        host: config.broker.host,
        codec: payloadCodec(config.temporal),
        namespace: config.temporal.namespace,
        onError: (err) => log.error('codec endpoint failed', { error: String(err) }),
      })
    : undefined;
  if (codec) log.info('codec endpoint listening', { url: codec.url, origins: config.codec!.origins });
  const server = await listen(app, config.broker);
  // The catalog is synced (startCatalogCache resolved with its first list) and the port serves.
  monitoring?.readiness(() => !stopping);
  log.info('broker listening', { url: `http://${config.broker.host}:${config.broker.port}` });
  return {
    url: `http://${config.broker.host}:${config.broker.port}`,
    /** Stops; with `delayMs`, first goes on answering that long, out of rotation (see AppOptions.stopping). */
    stop: async (delayMs = 0) => {
      stopping = true;
      if (delayMs > 0) {
        log.info('broker stopping', { delayMs });
        await new Promise((r) => setTimeout(r, delayMs));
      }
      await closeServer(server);
      await codec?.stop();
      await catalog.stop();
      await close();
    },
  };
}

/**
 * Serves the app. An idle connection stays open `keepAliveMs`: a load balancer that keeps idle
 * connections longer than the broker would sometimes send a request on one the broker is just
 * closing, and its client would see a reset. The header timeout must be longer still (Node).
 */
export async function listen(
  app: Koa,
  options: { readonly host: string; readonly port: number; readonly keepAliveMs: number },
): Promise<Server> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(options.port, options.host, () => resolve(s));
    s.once('error', reject);
  });
  // A request the HTTP parser refuses gets an OSB error body too, not Node's bare status line.
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = options.keepAliveMs;
  server.headersTimeout = options.keepAliveMs + 1000;
  server.requestTimeout = Math.max(server.requestTimeout, server.headersTimeout);
  return server;
}

/**
 * Stops serving: no new connections; requests in flight are answered, and each connection is
 * closed as soon as it is idle, rather than when its keep-alive time runs out (which would hold a
 * rolling update up by that long).
 */
export async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  try {
    await closed;
  } finally {
    clearInterval(sweep);
  }
}

/**
 * The subject OSB clients' certificates must have, when they are authenticated by certificate.
 *
 * @throws ConfigError when INTEROP_OSB_CLIENT_SUBJECT is not made of `type=value` parts.
 */
export function osbClientSubject(auth: Config['broker']['osbAuth']): SubjectRdns | undefined {
  if (auth.kind !== 'client-certificate') return undefined;
  const subject = subjectRdns(auth.subject);
  if (!subject)
    throw new ConfigError(
      'INTEROP_OSB_CLIENT_SUBJECT must be a subject of type=value parts, as CN=sm,O=Example,C=DE or /C=DE/O=Example/CN=sm',
    );
  return subject;
}
