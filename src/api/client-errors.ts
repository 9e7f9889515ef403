/**
 * Answers to requests Node's HTTP parser refuses before any middleware sees them (headers over
 * the size limit, a malformed request line or framing, a request that took too long to arrive):
 * the same OSB error body as every other failure, instead of Node's bare status line, then the
 * connection is closed, since what follows on it cannot be read.
 */
import type { Socket } from 'node:net';
import { OsbError } from '../osb/errors.js';

/** The error for what the parser said (its `code`, an `HPE_*` name or a Node error code). */
export function parserError(code: string | undefined): OsbError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new OsbError(
        431,
        'The request headers are larger than the broker accepts.',
        'RequestHeaderFieldsTooLarge',
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new OsbError(408, 'The request did not arrive in time.', 'RequestTimeout');
    default:
      return new OsbError(400, 'The request is not valid HTTP/1.1.', 'BadRequest');
  }
}

/**
 * The raw HTTP/1.1 response for an error, its body the OSB error body (none for a HEAD request,
 * whose answer has the headers alone); the connection closes.
 */
export function rawErrorResponse(error: OsbError, head = false): string {
  const body = JSON.stringify(error.toBody());
  return [
    `HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    head ? '' : body,
  ].join('\r\n');
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/**
 * The server's `clientError` listener. With a response to an earlier request on the connection
 * under way (what the parser refused came after a complete request: bytes after
 * `Connection: close`, a pipelined request that is not HTTP), that response is sent and the
 * connection closes after it. Otherwise the OSB error is written when nothing was written yet, as
 * Node's own listener does with its bare status line, and the connection closes.
 */
export function answerClientError(err: Error & { code?: string; rawPacket?: Buffer }, socket: Socket): void {
  const underWay = (socket as Socket & { _httpMessage?: { shouldKeepAlive: boolean } })._httpMessage;
  if (underWay && socket.writable) {
    underWay.shouldKeepAlive = false;
    return;
  }
  // The method, when the request line came whole: a HEAD request's answer has no body.
  const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  if (socket.writable && socket.bytesWritten === 0) socket.end(rawErrorResponse(parserError(err.code), head));
  else socket.destroy();
}
