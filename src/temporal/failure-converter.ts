/**
 * The failure converter of the client and the worker (loaded by path: the worker bundles it into
 * the workflow sandbox). A failure's message and stack trace travel as an encoded payload, which
 * the payload codec encrypts, so history holds only "Encoded failure": a template error may quote
 * a parameter. Whoever holds the key (the broker, the worker, the codec endpoint) reads them.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
