import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { chmod } from 'node:fs/promises';

export interface IndexProxy {
  /** The CONNECT targets it refused (a build that reached for anything but the index). */
  refused: string[];
  close(): Promise<void>;
}

/**
 * An environment build's only way out of its sandbox: an HTTP proxy on a Unix socket
 * that tunnels (CONNECT) to the package index's hosts on 443 and refuses everything else,
 * plain requests included. Node parses the proxy requests; this only decides and pipes.
 */
export async function startIndexProxy(socketPath: string, hosts: string[]): Promise<IndexProxy> {
  const allowed = new Set(hosts.map((h) => h.toLowerCase()));
  const refused: string[] = [];
  const open = new Set<Socket>();
  const server = createServer((req, res) => {
    refused.push(`${req.method} ${req.url}`);
    res.writeHead(403).end('only the package index is reachable\n');
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
    }),
  };
}

/** The hosts a build may reach: the index's own, and where PyPI serves its files. */
export function indexHosts(indexUrl: string, extra: string[] = []): string[] {
  const host = new URL(indexUrl).hostname;
  return [...new Set([host, ...(host === 'pypi.org' ? ['files.pythonhosted.org'] : []), ...extra])];
}
