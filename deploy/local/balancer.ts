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
export function haproxyConfig(o: { port: number; backends: Array<{ name: string; port: number }>; unavailableFile: string }): string {
  return [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 10m',
    '  timeout server 10m',
    '  timeout http-request 30s',
    // A check waits for /readyz's answer as the Deployment's probe does (3 s): its slowest
    // dependency probe is bounded at 2 s, and without this the check interval (500 ms)
    // would bound it, taking every replica out whenever Temporal answers slowly.
    '  timeout check 3s',
    '  retries 3',
    '  option redispatch 1',
    '  retry-on conn-failure empty-response response-timeout 503',
    '  option forwardfor',
    // What the balancer itself answers when no replica could (all out of rotation, one gone
    // mid-answer, none in time): the service's 503 with Retry-After, never a bare 502/504.
    ...['502', '503', '504'].map((code) => `  errorfile ${code} ${o.unavailableFile}`),
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

/** A complete HTTP response in the error envelope: HAProxy sends an errorfile as it is. */
const UNAVAILABLE = (() => {
  const body = JSON.stringify({ error: {
    type: 'service_unavailable_error', code: 'service_unavailable', message: 'No api replica could answer this request; retry shortly.',
    param: null, details: { dependency: 'api', retryable: true }, request_id: null,
  } });
  return ['HTTP/1.1 503 Service Unavailable', 'Content-Type: application/json', 'Retry-After: 1', 'Cache-Control: no-store', `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', body].join('\r\n');
})();

export async function startBalancer(sup: Supervisor, o: { dataDir: string; port: number; backends: Array<{ name: string; port: number }>; log: (l: string) => void }): Promise<Supervised> {
  const haproxy = await debianTool('haproxy', 'haproxy', o.log);
  if (!haproxy) throw new Error('the cluster topology balances its api replicas with HAProxy: install it (sudo apt-get install haproxy)');
  const dir = path.join(o.dataDir, 'balancer');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'haproxy.cfg');
  const unavailableFile = path.join(dir, 'unavailable.http');
  await writeFile(unavailableFile, UNAVAILABLE);
  await writeFile(file, haproxyConfig({ ...o, unavailableFile }));
  // -W: master-worker, so SIGTERM stops it cleanly; -db: stay in the foreground.
  const proc = sup.start('balancer', haproxy, ['-W', '-db', '-f', file], { env: { PATH: process.env.PATH ?? '' } });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  await waitFor('balancer', async () => (await fetch(`http://127.0.0.1:${o.port}/readyz`)).ok, 60000, () => exited);
  return proc;
}
