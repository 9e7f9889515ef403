/**
 * A lean HTTP/1.1 load client for the read benchmarks: one kept-alive socket per client, the
 * request's bytes built once, the response read by its Content-Length. The load shares the CPU
 * with the broker it measures, and every pause of the load's own collector delays all the reads in
 * flight at once, so it counts in the latencies measured: this client spends little CPU per
 * request and makes next to no garbage. Each socket reads into one buffer of its own (`onread`),
 * and the answer's status and Content-Length are read from its bytes; the body is decoded only
 * when the status is not 200.
 */
import net from 'node:net';

export interface Response {
  readonly status: number;
  /** The body, decoded only for an answer that is not 200 (for the error message). */
  readonly body: string;
}

/** Bytes a socket reads at once; an answer larger than this is gathered over several reads. */
const READ_BUFFER_BYTES = 64 * 1024;
const CR = 13;
const LF = 10;
const CONTENT_LENGTH = Buffer.from('content-length:', 'latin1');
const OK: Response = { status: 200, body: '' };

/** Where `\r\n\r\n` starts in `buf[0, length)`, or -1. */
function headEnd(buf: Buffer, length: number): number {
  for (let i = 3; i < length; i++) {
    if (buf[i] === LF && buf[i - 1] === CR && buf[i - 2] === LF && buf[i - 3] === CR) return i - 3;
  }
  return -1;
}

/** The Content-Length of the head in `buf[0, end)` (its name in any case), or -1. */
function contentLength(buf: Buffer, end: number): number {
  for (let line = 0; line < end;) {
    let next = line;
    while (next < end && buf[next] !== LF) next++;
    const start = next + 1;
    if (start + CONTENT_LENGTH.length <= end) {
      let matches = true;
      for (let k = 0; k < CONTENT_LENGTH.length && matches; k++) {
        matches = (buf[start + k]! | 0x20) === CONTENT_LENGTH[k]; // ASCII lower case; ':' has the bit already
      }
      if (matches) {
        let value = 0;
        let digits = 0;
        for (let i = start + CONTENT_LENGTH.length; i < end && buf[i] !== CR; i++) {
          const c = buf[i]!;
          if (c >= 48 && c <= 57) {
            value = value * 10 + (c - 48);
            digits++;
          } else if (c !== 32 && c !== 9) return -1;
        }
        return digits ? value : -1;
      }
    }
    line = start;
  }
  return -1;
}

/** One client: a connection that sends a request, waits for the whole answer, then the next. */
export class LoadClient {
  private readonly socket: net.Socket;
  /** The answer so far: bytes [0, length). Grows (rarely) when an answer outgrows it. */
  private answer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private length = 0;
  private pending?: { resolve(res: Response): void; reject(err: Error): void };
  private failure?: Error;

  private constructor(port: number, host: string, connected: () => void, failed: (err: Error) => void) {
    const read = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    this.socket = net.connect({
      port,
      host,
      noDelay: true,
      onread: { buffer: read, callback: (bytes: number) => this.receive(read, bytes) },
    });
    this.socket.once('connect', connected);
    this.socket.once('error', failed);
    const fail = (err: Error) => {
      this.failure = err;
      this.pending?.reject(err);
      this.pending = undefined;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('the server closed the connection')));
  }

  static connect(port: number, host = '127.0.0.1'): Promise<LoadClient> {
    return new Promise((resolve, reject) => {
      const client: LoadClient = new LoadClient(port, host, () => resolve(client), reject);
    });
  }

  /** The request's bytes, for {@link send}: GET `path` with `headers`, kept alive. */
  static get(path: string, headers: Record<string, string>): Buffer {
    const lines = [
      `GET ${path} HTTP/1.1`,
      'Host: broker',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  }

  send(request: Buffer): Promise<Response> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('one request at a time'));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(request);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  /** `bytes` more of the answer in `read` (the socket's read buffer, reused on the next read). */
  private receive(read: Buffer, bytes: number): boolean {
    if (this.length + bytes > this.answer.length) {
      const larger = Buffer.allocUnsafe(Math.max(this.answer.length * 2, this.length + bytes));
      this.answer.copy(larger, 0, 0, this.length);
      this.answer = larger;
    }
    read.copy(this.answer, this.length, 0, bytes);
    this.length += bytes;
    const end = headEnd(this.answer, this.length);
    if (end < 0) return true;
    const pending = this.pending;
    const length = contentLength(this.answer, end);
    if (length < 0) {
      this.pending = undefined;
      pending?.reject(
        new Error(
          `a response without Content-Length: ${this.answer.toString('latin1', 0, end).split('\r\n')[0]}`,
        ),
      );
      this.socket.destroy();
      return false;
    }
    const bodyStart = end + 4;
    if (this.length < bodyStart + length) return true;
    const status = (this.answer[9]! - 48) * 100 + (this.answer[10]! - 48) * 10 + (this.answer[11]! - 48);
    const res =
      status === 200 ? OK : { status, body: this.answer.toString('utf8', bodyStart, bodyStart + length) };
    // One request at a time: nothing follows the answer on this connection.
    this.length = 0;
    this.pending = undefined;
    pending?.resolve(res);
    return true;
  }
}
