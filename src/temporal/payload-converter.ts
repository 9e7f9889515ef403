/**
 * The payload converter of the client and the worker (loaded by path: the worker bundles it into
 * the workflow sandbox): Temporal's default, except that a value marked for a cluster
 * (workflows/for-cluster.ts) becomes the payload of the value itself, with the cluster noted
 * in its metadata, for the codec to encrypt it with that cluster's key (codec.ts). Reading a
 * payload back is the default's: the step gets the value as it was given.
 */
import {
  defaultPayloadConverter,
  u8,
  type Payload,
  type PayloadConverter,
  type SerializationContext,
} from '@temporalio/common';
import { clusterOf } from '../workflows/for-cluster.js';

/** The metadata field naming the cluster whose key encrypts the payload. */
export const ENCRYPTION_CLUSTER = 'encryption-cluster';

export const payloadConverter: PayloadConverter = {
  toPayload<T>(value: T, context?: SerializationContext): Payload {
    const clusterId = clusterOf(value);
    if (clusterId === undefined) return defaultPayloadConverter.toPayload(value, context);
    const payload = defaultPayloadConverter.toPayload((value as { value: unknown }).value, context);
    return { ...payload, metadata: { ...payload.metadata, [ENCRYPTION_CLUSTER]: u8(clusterId) } };
  },
  fromPayload: <T>(payload: Payload, context?: SerializationContext): T =>
    defaultPayloadConverter.fromPayload<T>(payload, context),
};
