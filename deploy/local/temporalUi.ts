import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';

/**
 * The Temporal UI of the cluster topology: the UI server built from its Go module (the one
 * the dev server embeds), against the cluster's frontend, on loopback only: on one machine
 * the operator's authentication is the machine's own. A deployment puts it behind the
 * operator's sign-in instead (deploy/k8s/helm/temporal-values.yaml, `web`).
 */
export async function startTemporalUi(
  sup: Supervisor,
  o: { bin: string; dataDir: string; port: number; temporalAddress: string; namespace: string },
): Promise<{ url: string; proc: Supervised }> {
  const root = path.join(o.dataDir, 'temporal-ui');
  await mkdir(path.join(root, 'config'), { recursive: true });
  const url = `http://localhost:${o.port}`;
  await writeFile(path.join(root, 'config', 'cluster.yaml'), stringify({
    temporalGrpcAddress: o.temporalAddress, host: '127.0.0.1', port: o.port, publicPath: '', enableUi: true,
    defaultNamespace: o.namespace, notifyOnNewVersion: false, refreshInterval: '0s', showTemporalSystemNamespace: false,
    cors: { allowOrigins: [url, `http://127.0.0.1:${o.port}`], cookieInsecure: true },
    auth: { enabled: false },
  }));
  const proc = sup.start('temporal-ui', o.bin, ['--root', root, '--config', 'config', '--env', 'cluster', 'start'], {
    env: { PATH: process.env.PATH ?? '', HOME: root },
  });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  await waitFor('temporal ui', async () => (await fetch(`${url}/api/v1/settings`)).ok, 60000, () => exited);
  return { url, proc };
}
