/** The Temporal client and data converter shared by the broker and the worker. */
import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import { fileURLToPath } from 'node:url';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { EncryptionCodec, type PayloadKey } from './codec.js';

/** Where Temporal is and how payloads are encrypted (from the configuration). */
export interface TemporalSettings {
  readonly address: string;
  readonly namespace: string;
  /** The first encrypts, all decrypt. */
  readonly payloadKeys: readonly PayloadKey[];
}

/** The codec of every payload: the data converter's, and the codec endpoint's. */
export const payloadCodec = (settings: Pick<TemporalSettings, 'payloadKeys'>): PayloadCodec =>
  new EncryptionCodec(settings.payloadKeys);

/** Payloads encrypted, and failures' messages and stack traces with them (failure-converter.ts). */
export const dataConverter = (settings: TemporalSettings): DataConverter => ({
  payloadCodecs: [payloadCodec(settings)],
  failureConverterPath: fileURLToPath(new URL('./failure-converter.js', import.meta.url)),
});

/** A Temporal client; `interceptors` see every call it makes (tracing puts its context in the headers). */
export async function connectClient(
  settings: TemporalSettings,
  interceptors?: ClientInterceptors,
): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address: settings.address });
  const client = new Client({
    connection,
    namespace: settings.namespace,
    dataConverter: dataConverter(settings),
    ...(interceptors ? { interceptors } : {}),
  });
  return { client, close: () => connection.close() };
}
