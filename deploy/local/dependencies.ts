import { Connection } from '@temporalio/client';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';

/** The servers the service depends on, by the name its 503s give them. */
export type DependencyName = 'postgres' | 'object_store' | 'temporal';

/** A server of the stack that a soak may take down and bring back, or freeze through its process. */
export interface Dependency {
  name: DependencyName;
  /** Its server process as it runs now (a start replaces it). */
  process(): Supervised;
  /** Stops it as an outage does: its clients' connections drop and new ones are refused. Resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on its data and port; resolves once it serves. */
  start(): Promise<void>;
}

/**
 * A dependency started again as it was first started. `stopSignal`: the server's own
 * quick shutdown (Postgres: SIGINT, which ends its sessions at once).
 */
export function restartable(name: DependencyName, first: Supervised, o: {
  stopSignal: NodeJS.Signals; ready: () => Promise<void>; respawn: (gone: Supervised) => Supervised | Promise<Supervised>;
}): Dependency {
  let current = first;
  return {
    name,
    process: () => current,
    async stop() {
      if (current.child.exitCode === null && current.child.signalCode === null) current.child.kill(o.stopSignal);
      const timer = setTimeout(() => current.child.kill('SIGKILL'), 20_000);
      await current.exited;
      clearTimeout(timer);
    },
    async start() {
      current = await o.respawn(current);
      await o.ready();
    },
  };
}

/** The same process started again by the supervisor that started it. */
export const respawnWith = (sup: Supervisor) => (gone: Supervised): Supervised => sup.restart(gone);

/** Resolves once Temporal's frontend at `address` answers (`failed`: a reason to stop waiting). */
export function temporalServes(address: string, failed?: () => string | undefined): Promise<void> {
  return waitFor('temporal', async () => {
    const conn = await Connection.connect({ address, connectTimeout: 1000 });
    try {
      await conn.workflowService.getSystemInfo({});
      return true;
    } finally {
      await conn.close();
    }
  }, 120_000, failed);
}
