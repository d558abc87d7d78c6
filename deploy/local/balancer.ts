import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { debianTool } from './apt.ts';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';

/**
 * The load balancer in front of the api replicas: HAProxy, Debian's package. Each replica
 * is health-checked on /readyz (out of rotation within a second when it fails or stops);
 * a request that could not reach a replica, or whose replica went away before answering,
 * is retried on another when it is a read (GET, HEAD): a write is retried by its client
 * with its Idempotency-Key, never by the balancer. Server-sent event streams stay open as
 * long as they run.
 */
export function haproxyConfig(o: { port: number; backends: Array<{ name: string; port: number }> }): string {
  return [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 10m',
    '  timeout server 10m',
    '  timeout http-request 30s',
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response response-timeout 503',
    '  option forwardfor',
    'frontend api',
    `  bind 127.0.0.1:${o.port}`,
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  http-request disable-l7-retry if !METH_GET !METH_HEAD',
    ...o.backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check inter 500ms fall 2 rise 2`),
    '',
  ].join('\n');
}

export async function startBalancer(sup: Supervisor, o: { dataDir: string; port: number; backends: Array<{ name: string; port: number }>; log: (l: string) => void }): Promise<Supervised> {
  const haproxy = await debianTool('haproxy', 'haproxy', o.log);
  if (!haproxy) throw new Error('the cluster topology balances its api replicas with HAProxy: install it (sudo apt-get install haproxy)');
  const dir = path.join(o.dataDir, 'balancer');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'haproxy.cfg');
  await writeFile(file, haproxyConfig(o));
  // -W: master-worker, so SIGTERM stops it cleanly; -db: stay in the foreground.
  const proc = sup.start('balancer', haproxy, ['-W', '-db', '-f', file], { env: { PATH: process.env.PATH ?? '' } });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  await waitFor('balancer', async () => (await fetch(`http://127.0.0.1:${o.port}/readyz`)).ok, 60000, () => exited);
  return proc;
}
