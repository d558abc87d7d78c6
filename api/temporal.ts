import { Client, Connection } from '@temporalio/client';
import protoPkg from '@temporalio/proto';
import { computeTaskQueue } from '../workflows/constants.ts';

/**
 * The API's door to Temporal: one lazily opened connection, a readiness probe, and the
 * worker presence per compute profile (a profile is available when a worker polls its
 * queue). The API never reads client-visible state from Temporal.
 */
export interface TemporalGateway {
  client(): Promise<Client>;
  ping(): Promise<boolean>;
  /** True when at least one worker polled the profile's task queue recently (cached 5 s). */
  hasComputeWorker(profileId: string): Promise<boolean>;
  /** True when a worker currently polls a task queue for workflow or activity tasks. */
  hasPoller(taskQueue: string, kind: 'workflow' | 'activity'): Promise<boolean>;
  close(): Promise<void>;
}

export function createTemporalGateway(cfg: { address: string; namespace: string }): TemporalGateway {
  let conn: Promise<Connection> | undefined;
  let client: Client | undefined;
  const pollerCache = new Map<string, { at: number; value: boolean }>();
  const connection = () => {
    conn ??= Connection.connect({ address: cfg.address, connectTimeout: 2000 }).catch((err) => {
      conn = undefined;
      throw err;
    });
    return conn;
  };
  return {
    async client() {
      client ??= new Client({ connection: await connection(), namespace: cfg.namespace });
      return client;
    },
    async ping() {
      const c = await connection();
      await c.withDeadline(Date.now() + 2000, () => c.workflowService.getSystemInfo({}));
      return true;
    },
    async hasPoller(taskQueue, kind) {
      const c = await connection();
      const { TaskQueueType } = protoPkg.temporal.api.enums.v1;
      const res = await c.withDeadline(Date.now() + 2000, () =>
        c.workflowService.describeTaskQueue({
          namespace: cfg.namespace,
          taskQueue: { name: taskQueue },
          taskQueueType: kind === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        }));
      return (res.pollers ?? []).length > 0;
    },
    async hasComputeWorker(profileId) {
      const hit = pollerCache.get(profileId);
      if (hit && Date.now() - hit.at < 5000) return hit.value;
      const value = await this.hasPoller(computeTaskQueue(profileId), 'activity');
      pollerCache.set(profileId, { at: Date.now(), value });
      return value;
    },
    async close() {
      if (conn) await (await conn).close().catch(() => undefined);
    },
  };
}
