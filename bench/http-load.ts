/**
 * A lean HTTP/1.1 load client for the read benchmarks: one kept-alive socket per client, the
 * request's bytes built once, the response read by its Content-Length. On a 2-core machine the
 * load shares the CPU with the broker it measures; node:http costs about as much CPU per request
 * as the broker answering it, this a fraction of that, so the latency measured is the broker's.
 */
import net from 'node:net';

export interface Response {
  readonly status: number;
  readonly body: string;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** One client: a connection that sends a request, waits for the whole answer, then the next. */
export class LoadClient {
  private buffer: Buffer = Buffer.alloc(0);
  private pending?: { resolve(res: Response): void; reject(err: Error): void };
  private failure?: Error;

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    const fail = (err: Error) => {
      this.failure = err;
      this.pending?.reject(err);
      this.pending = undefined;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('the server closed the connection')));
  }

  static connect(port: number, host = '127.0.0.1'): Promise<LoadClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, host, () => resolve(new LoadClient(socket)));
      socket.once('error', reject);
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

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const headEnd = this.buffer.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = this.buffer.toString('latin1', 0, headEnd);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const pending = this.pending;
    this.pending = undefined;
    if (!length) {
      pending?.reject(new Error(`a response without Content-Length: ${head.split('\r\n')[0]}`));
      this.socket.destroy();
      return;
    }
    const end = headEnd + HEAD_END.length + Number(length[1]);
    if (this.buffer.length < end) {
      this.pending = pending;
      return;
    }
    const body = this.buffer.toString('utf8', headEnd + HEAD_END.length, end);
    this.buffer = this.buffer.subarray(end);
    pending?.resolve({ status: Number(head.slice(9, 12)), body });
  }
}
