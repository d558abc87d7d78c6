import { Agent, request } from 'node:http';

/**
 * The benchmarks' HTTP client: Node's http module on a keep-alive agent. A load generator
 * shares the machine with what it measures, so it should cost as little CPU as it can;
 * fetch (undici) spent about twice Node's http per request here.
 */
export function createHttpClient(base: string, headers: Record<string, string>, maxSockets = 64) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const url = new URL(base);
  const call = (method: string, path: string, body: string | null, extra: Record<string, string>) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({
        host: url.hostname, port: url.port, path: `${url.pathname}${path}`, method, agent,
        headers: { ...headers, ...extra, ...(body === null ? {} : { 'Content-Length': Buffer.byteLength(body) }) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  return {
    /** A JSON request; throws on a non-2xx answer, naming it. */
    async json<T = any>(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<T> {
      const r = await call(method, path, body === undefined ? null : JSON.stringify(body), body === undefined ? extra : { 'Content-Type': 'application/json', ...extra });
      if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
      return JSON.parse(r.text) as T;
    },
    /** Reads a response to its end (an event stream until the server closes it). */
    async text(path: string, extra: Record<string, string> = {}): Promise<string> {
      const r = await call('GET', path, null, extra);
      if (r.status < 200 || r.status > 299) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
      return r.text;
    },
    close: () => agent.destroy(),
  };
}
