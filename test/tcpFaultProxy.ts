import net, { type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of one of the stack's dependencies (Postgres, MinIO, Temporal),
 * for a replica api to reach it through, that a test can switch between:
 * - `pass`: relays both ways;
 * - `down`: the dependency is stopped: every open connection is cut and new ones are
 *   refused (closed at once);
 * - `paused`: the dependency accepts and never answers (as a SIGSTOPped process does):
 *   open connections stop relaying, new ones are held open and unanswered.
 * Only loopback addresses are involved.
 */
export type ProxyMode = 'pass' | 'down' | 'paused';

export interface TcpFaultProxy {
  port: number;
  setMode(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function createTcpFaultProxy(target: { host: string; port: number }): Promise<TcpFaultProxy> {
  let mode: ProxyMode = 'pass';
  const pairs = new Set<{ client: Socket; upstream: Socket | null }>();
  const cut = (p: { client: Socket; upstream: Socket | null }) => {
    p.client.destroy();
    p.upstream?.destroy();
    pairs.delete(p);
  };
  const server: Server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (mode === 'down') {
      client.destroy();
      return;
    }
    const pair = { client, upstream: null as Socket | null };
    pairs.add(pair);
    client.once('close', () => cut(pair));
    if (mode === 'paused') return;
    const upstream = net.connect(target);
    pair.upstream = upstream;
    upstream.on('error', () => cut(pair));
    upstream.once('close', () => cut(pair));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    setMode(next) {
      mode = next;
      if (next === 'down') for (const p of [...pairs]) cut(p);
      if (next === 'paused') {
        for (const p of pairs) {
          p.client.unpipe();
          p.upstream?.unpipe();
          p.client.pause();
          p.upstream?.pause();
        }
      }
      // Back to `pass`: connections held while paused are cut, so clients reconnect cleanly.
      if (next === 'pass') for (const p of [...pairs]) if (p.client.isPaused() || !p.upstream) cut(p);
    },
    async close() {
      for (const p of [...pairs]) cut(p);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
