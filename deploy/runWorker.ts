import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Db } from '../storage/db/knex.ts';
import { createRunActivities } from '../activities/runs.ts';
import { RUN_TASK_QUEUE } from '../kernel/workflowNames.ts';
import { WORKFLOWS_PATH } from './workflowBundle.ts';

/**
 * A worker of lone runs' workflows (RUN_TASK_QUEUE) and their control steps, as every
 * worker process hosts one and every api process too (docs/decisions.md: eager starts).
 */
export function runWorkerOptions(opts: { connection: NativeConnection; namespace: string; db: Db; maxConcurrentRuns: number; workflowBundle?: string }): WorkerOptions {
  return {
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: RUN_TASK_QUEUE,
    // As on the control queue: a dead process's cached runs move on within seconds.
    stickyQueueScheduleToStartTimeout: '2 seconds',
    ...(opts.workflowBundle ? { workflowBundle: { codePath: opts.workflowBundle } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createRunActivities({ db: opts.db, maxConcurrentRuns: opts.maxConcurrentRuns }),
  };
}

/**
 * The run worker of an api process, started in the background: the api serves while
 * Temporal is away (its routes answer 503), and this worker starts once Temporal answers,
 * trying again every 2 s. Until it runs, starts are simply not eager.
 */
export function startRunWorker(opts: { connect: () => Promise<NativeConnection>; namespace: string; db: Db; maxConcurrentRuns: number; workflowBundle?: string; log: Logger }): { stop(): Promise<void> } {
  let stopping = false;
  let worker: Worker | undefined;
  let wake: (() => void) | undefined;
  const running = (async () => {
    while (!stopping) {
      try {
        worker = await Worker.create(runWorkerOptions({ ...opts, connection: await opts.connect() }));
        const run = worker.run();
        if (stopping) worker.shutdown();
        await run;
        return;
      } catch (err) {
        if (stopping) return;
        opts.log.warn({ err }, 'run worker not running; trying again in 2 s');
        worker = undefined;
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 2000);
        });
      }
    }
  })();
  return {
    async stop() {
      stopping = true;
      wake?.();
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}
