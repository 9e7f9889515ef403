/** The Temporal client and data converter shared by the broker and the worker. */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config.js';
import { EncryptionCodec } from './codec.js';

export const dataConverter = (config: Config): DataConverter => ({
  payloadCodecs: [new EncryptionCodec(config.temporal.payloadKeys)],
});

export async function connectClient(config: Config): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: dataConverter(config),
  });
  return { client, close: () => connection.close() };
}
