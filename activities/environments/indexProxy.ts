import { createServer, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { chmod } from 'node:fs/promises';

export interface IndexProxy {
  /** The CONNECT targets it refused (a build that reached for anything but the index). */
  refused: string[];
  close(): Promise<void>;
}

/** Headers of one hop, not forwarded (RFC 9110, 7.6.1). */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

/** The plain-HTTP origin a request in absolute form asks for, when it is `plain` and the method only reads. */
function plainTarget(method: string | undefined, url: string | undefined, plain: string | null): URL | null {
  if (!plain || (method !== 'GET' && method !== 'HEAD') || !url) return null;
  try {
    const target = new URL(url);
    return target.origin === plain ? target : null;
  } catch {
    return null;
  }
}

/**
 * An environment build's only way out of its sandbox: an HTTP proxy on a Unix socket
 * that tunnels (CONNECT) to the package index's hosts on 443, forwards reads (GET, HEAD)
 * to the index's own origin when the operator's index is served over plain HTTP (`plain`,
 * a mirror on the local network), and refuses everything else. Node parses the proxy
 * requests; this only decides and pipes.
 */
export async function startIndexProxy(socketPath: string, hosts: string[], plain: string | null = null): Promise<IndexProxy> {
  const allowed = new Set(hosts.map((h) => h.toLowerCase()));
  const refused: string[] = [];
  const open = new Set<Socket>();
  const server = createServer((req, res) => {
    const target = plainTarget(req.method, req.url, plain);
    if (!target) {
      refused.push(`${req.method} ${req.url}`);
      res.writeHead(403).end('only the package index is reachable\n');
      return;
    }
    const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: target.host };
    for (const h of HOP_BY_HOP) delete headers[h];
    const upstream = request(target, { method: req.method, headers }, (answer) => {
      const back: Record<string, string | string[] | undefined> = { ...answer.headers };
      for (const h of HOP_BY_HOP) delete back[h];
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    upstream.end();
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    const m = /^([A-Za-z0-9.-]+):(\d+)$/.exec(req.url ?? '');
    if (!m || m[2] !== '443' || !allowed.has(m[1]!.toLowerCase())) {
      refused.push(`CONNECT ${req.url}`);
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = connect(443, m[1]!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    open.add(upstream);
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // Past listening, a connection it could not accept fails that build's fetch, not the worker.
  server.on('error', () => undefined);
  // The sandbox's user connects to it.
  await chmod(socketPath, 0o777);
  return {
    refused,
    close: () => new Promise<void>((resolve) => {
      for (const s of open) s.destroy();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** The index's origin when it is served over plain HTTP (what the proxy forwards reads to), else null. */
export function plainIndexOrigin(indexUrl: string): string | null {
  const url = new URL(indexUrl);
  return url.protocol === 'http:' ? url.origin : null;
}

/** The hosts a build may reach: the index's own, and where PyPI serves its files. */
export function indexHosts(indexUrl: string, extra: string[] = []): string[] {
  const host = new URL(indexUrl).hostname;
  return [...new Set([host, ...(host === 'pypi.org' ? ['files.pythonhosted.org'] : []), ...extra])];
}
