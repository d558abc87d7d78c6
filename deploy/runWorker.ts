import { NativeConnection, Worker, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import { asyncLocalStorage as activityContexts } from '@temporalio/activity';
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
 * Temporal keeps a running activity's Context in one AsyncLocalStorage per process, which
 * stays enabled after the activity; on Node 20 an enabled storage makes every promise of
 * the process pay async hooks, so in the api every request would pay for the run worker's
 * control steps. In the api, whose only activities these are, the storage is disabled
 * whenever none is running (the next one's `run` enables it again). Not in a worker
 * process: its other activities (a lab's execution) read their Context while these end.
 */
export function quietActivityContexts(): ActivityInterceptorsFactory {
  let running = 0;
  return () => ({
    inbound: {
      async execute(input, next) {
        running += 1;
        try {
          return await next(input);
        } finally {
          running -= 1;
          if (running === 0) activityContexts.disable();
        }
      },
    },
  });
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
        worker = await Worker.create({ ...runWorkerOptions({ ...opts, connection: await opts.connect() }), interceptors: { activity: [quietActivityContexts()] } });
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
