import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * A forwarding HTTP proxy in front of the test stack's API that can be told to misbehave
 * for the next matching request(s): answer an error without forwarding, forward and then
 * lose the real answer (so a client retry is a true replay), flip a byte of the body, or
 * drop the connection. It records every request it sees, so tests assert what the client
 * actually sent (how many attempts, which headers, when).
 */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** performance.now() when the request arrived. */
  at: number;
  /** The fault applied to it, if any. */
  fault?: Fault['kind'];
}

export type Fault =
  /** Answer this status without forwarding. */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  /** Forward upstream and let it finish, then answer this status instead of its answer. */
  | { kind: 'forward-then-status'; status: number; headers?: Record<string, string>; body?: unknown }
  /** Forward, but invert one byte in the middle of the answer's body. */
  | { kind: 'tamper' }
  /** Destroy the connection without answering. */
  | { kind: 'drop' };

interface Rule {
  match: (r: SeenRequest) => boolean;
  fault: Fault;
  left: number;
}

export class FaultProxy {
  readonly seen: SeenRequest[] = [];
  private rules: Rule[] = [];
  private server: Server | undefined;
  private upstream: URL;
  base = '';

  constructor(upstreamBase: string) {
    this.upstream = new URL(upstreamBase);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${this.upstream.pathname.replace(/\/$/, '')}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** Applies `fault` to the next `times` requests matching `method` and the path pattern. */
  inject(method: string, pathPattern: RegExp, fault: Fault, times = 1): void {
    this.rules.push({ match: (r) => r.method === method && pathPattern.test(r.path.split('?')[0]!), fault, left: times });
  }

  /** Requests seen from index `since` on that match. */
  requests(method: string, pathPattern: RegExp, since = 0): SeenRequest[] {
    return this.seen.slice(since).filter((r) => r.method === method && pathPattern.test(r.path.split('?')[0]!));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const seen: SeenRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, at: performance.now() };
    this.seen.push(seen);
    const rule = this.rules.find((r) => r.left > 0 && r.match(seen));
    if (rule) {
      rule.left -= 1;
      seen.fault = rule.fault.kind;
    }
    const fault = rule?.fault;
    try {
      if (fault?.kind === 'drop') {
        req.socket.destroy();
        return;
      }
      if (fault?.kind === 'status') {
        req.resume();
        this.answer(res, fault);
        return;
      }
      const up = await this.forward(req);
      if (fault?.kind === 'forward-then-status') {
        await drain(up);
        this.answer(res, fault);
        return;
      }
      if (fault?.kind === 'tamper') {
        const body = await collect(up);
        if (body.length) body[Math.floor(body.length / 2)]! ^= 0xff;
        res.writeHead(up.statusCode ?? 502, up.headers);
        res.end(body);
        return;
      }
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    } catch (err) {
      res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`proxy: ${(err as Error).message}`);
    }
  }

  private forward(req: IncomingMessage): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const out = httpRequest({
        host: this.upstream.hostname, port: this.upstream.port, method: req.method, path: req.url,
        headers: { ...req.headers, host: this.upstream.host },
      }, resolve);
      out.on('error', reject);
      req.pipe(out);
    });
  }

  private answer(res: ServerResponse, fault: { status: number; headers?: Record<string, string>; body?: unknown }): void {
    const body = JSON.stringify(fault.body ?? {
      error: { type: 'api_error', code: `injected_${fault.status}`, message: 'injected by the test proxy', param: null, details: {}, request_id: crypto.randomUUID() },
    });
    res.writeHead(fault.status, { 'Content-Type': 'application/json', ...fault.headers });
    res.end(body);
  }
}

function collect(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

async function drain(stream: IncomingMessage): Promise<void> {
  await collect(stream);
}

/** The spec's error envelope, for injected answers. */
export function errorEnvelope(type: string, code: string, message = 'injected by the test proxy') {
  return { error: { type, code, message, param: null, details: {}, request_id: crypto.randomUUID() } };
}
