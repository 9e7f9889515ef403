/** The Temporal client and data converter shared by the broker and the worker. */
import { Client, Connection, type ClientInterceptors, type TLSConfig } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { EncryptionCodec, type PayloadKey } from './codec.js';

/** Where Temporal is and how payloads are encrypted (from the configuration). */
export interface TemporalSettings {
  readonly address: string;
  readonly namespace: string;
  /** The first encrypts, all decrypt. */
  readonly payloadKeys: readonly PayloadKey[];
  /** TLS to the frontend (files named as in src/config.ts); plain when unset. */
  readonly tls?: {
    readonly caFile?: string;
    readonly serverName?: string;
    readonly clientCert?: { readonly certFile: string; readonly keyFile: string };
  };
  /** Sent as a bearer token on every call. */
  readonly apiKey?: string;
}

/** What the client connection and the worker's native connection are given. */
export interface ConnectionOptions {
  readonly address: string;
  readonly tls?: TLSConfig;
  readonly apiKey?: string;
}

/** The connection options of the settings, with the TLS files read (they are read at each connect, so renewed certificates are picked up). */
export function connectionOptions(
  settings: Pick<TemporalSettings, 'address' | 'tls' | 'apiKey'>,
): ConnectionOptions {
  const read = (file: string, what: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(
        `cannot read the Temporal ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  };
  const { tls } = settings;
  return {
    address: settings.address,
    ...(tls
      ? {
          tls: {
            ...(tls.caFile ? { serverRootCACertificate: read(tls.caFile, 'CA file') } : {}),
            ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
            ...(tls.clientCert
              ? {
                  clientCertPair: {
                    crt: read(tls.clientCert.certFile, 'client certificate'),
                    key: read(tls.clientCert.keyFile, 'client key'),
                  },
                }
              : {}),
          },
        }
      : {}),
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
  };
}

/** The codec of every payload: the data converter's, and the codec endpoint's. */
export const payloadCodec = (settings: Pick<TemporalSettings, 'payloadKeys'>): PayloadCodec =>
  new EncryptionCodec(settings.payloadKeys);

/** The payload converter's module (payload-converter.ts), which the workflow bundles are built with too. */
export const PAYLOAD_CONVERTER_PATH = fileURLToPath(new URL('./payload-converter.js', import.meta.url));

/**
 * Payloads encrypted, steps for a cluster's own worker with that cluster's key
 * (payload-converter.ts), and failures' messages and stack traces with them (failure-converter.ts).
 */
export const dataConverter = (settings: TemporalSettings): DataConverter => ({
  payloadCodecs: [payloadCodec(settings)],
  payloadConverterPath: PAYLOAD_CONVERTER_PATH,
  failureConverterPath: fileURLToPath(new URL('./failure-converter.js', import.meta.url)),
});

/** A Temporal client; `interceptors` see every call it makes (tracing puts its context in the headers). */
export async function connectClient(
  settings: TemporalSettings,
  interceptors?: ClientInterceptors,
): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect(connectionOptions(settings));
  const client = new Client({
    connection,
    namespace: settings.namespace,
    dataConverter: dataConverter(settings),
    ...(interceptors ? { interceptors } : {}),
  });
  return { client, close: () => connection.close() };
}
