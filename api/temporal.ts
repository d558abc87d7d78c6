import { Client, Connection, type ConnectionLike, isGrpcDeadlineError, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowStartOptions } from '@temporalio/client';
import type { SignalDefinition, UpdateDefinition, Workflow, WorkflowResultType } from '@temporalio/common';
import { DependencyUnavailable } from '../storage/dependencies.ts';
import protoPkg from '@temporalio/proto';
import { computeTaskQueue } from '../kernel/workflowNames.ts';

/**
 * The API's door to Temporal: one lazily opened connection, a readiness probe, and the
 * worker presence per compute profile (a profile is available when a worker polls its
 * queue). The API never reads client-visible state from Temporal.
 */
export interface TemporalGateway {
  client(): Promise<Client>;
  /**
   * Starts a workflow, named by its own function (never a string), within the call deadline. Throws DependencyUnavailable('temporal')
   * when Temporal refuses or does not answer in time; a workflow id already taken is
   * WorkflowExecutionAlreadyStartedError, as the client says. With `awaitPreviousMs`, a
   * run of that id that is still closing (a per-entity workflow whose work has ended) is
   * waited for that long, then the new one starts; still running then is
   * DependencyUnavailable('temporal').
   */
  startWorkflow<W extends Workflow>(workflow: W, options: WorkflowStartOptions<W>, opts?: { awaitPreviousMs?: number }): Promise<void>;
  /**
   * Starts a short workflow and waits up to `waitMs` for its result (the api answers with
   * it). Temporal refusing or not answering is DependencyUnavailable('temporal'); the
   * workflow started but its result not there in time is WorkflowStillRunning (one kind
   * of it); a workflow that failed is WorkflowFailedError.
   * With `join`, a workflow of that id already started (a retried request) is awaited
   * instead of refused.
   */
  executeWorkflow<W extends Workflow>(workflow: W, options: WorkflowStartOptions<W>, waitMs: number, opts?: { join?: boolean }): Promise<WorkflowResultType<W>>;
  /** Requests a workflow's cancellation within the call deadline (a workflow already gone is fine). */
  cancelWorkflow(workflowId: string): Promise<void>;
  /** Sends a signal (by its definition) to a workflow within the call deadline (a workflow already gone is fine). */
  signalWorkflow<Args extends unknown[]>(workflowId: string, signal: SignalDefinition<Args>, args: Args): Promise<void>;
  /**
   * Sends an update (by its definition) to a running workflow and waits for its result within the call
   * deadline. A validator's or handler's refusal is WorkflowUpdateFailedError and a
   * workflow that is gone WorkflowNotFoundError, as the client says; anything else is
   * DependencyUnavailable('temporal'). An `updateId` makes a retried update (its answer
   * lost) the same update: Temporal answers it with the first one's outcome.
   */
  executeUpdate<R, Args extends unknown[]>(workflowId: string, update: UpdateDefinition<R, Args>, args: Args, opts?: { updateId?: string }): Promise<R>;
  /**
   * Sends a signal (by its definition) to the workflow of `options.workflowId`, starting it
   * first when no run of that id is open (one that ended is started anew), within the call
   * deadline; Temporal refusing or not answering is DependencyUnavailable('temporal').
   */
  signalWithStart<W extends Workflow, SA extends unknown[]>(workflow: W, signal: SignalDefinition<SA>, signalArgs: SA, options: WorkflowStartOptions<W>): Promise<void>;
  ping(): Promise<boolean>;
  /** True when at least one worker polled the profile's task queue recently (cached 5 s). */
  hasComputeWorker(profileId: string): Promise<boolean>;
  /** True when a worker currently polls a task queue for workflow or activity tasks. */
  hasPoller(taskQueue: string, kind: 'workflow' | 'activity'): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A workflow that started (or was already running) but had not ended when the caller
 * stopped waiting. It is a DependencyUnavailable('temporal') (503 where nobody looks
 * closer); an operation whose retry joins the same workflow can say it is still running.
 */
export class WorkflowStillRunning extends DependencyUnavailable {
  readonly workflowId: string;
  constructor(workflowId: string) {
    super('temporal', `workflow ${workflowId} is still running`);
    this.workflowId = workflowId;
    this.name = 'WorkflowStillRunning';
  }
}

/** Errors that are Temporal's answer about a workflow, not Temporal being unavailable. */
function isAnswer(err: unknown): boolean {
  return err instanceof WorkflowExecutionAlreadyStartedError || err instanceof WorkflowNotFoundError || err instanceof WorkflowFailedError
    || err instanceof WorkflowUpdateFailedError || err instanceof WorkflowStillRunning;
}

export interface TemporalGatewayConfig {
  address: string;
  namespace: string;
  timeoutMs?: number;
  /**
   * A process that runs a worker beside the api passes that worker's own connection and
   * the task queues it polls: workflows started on those queues go through a client on
   * that connection and ask for an eager start (their first task handed straight to that
   * worker). Every other call keeps the gateway's own gRPC connection, whose errors
   * (deadlines above all) the gateway reads.
   */
  eager?: { connect: () => Promise<ConnectionLike>; taskQueues: readonly string[] };
}

/** A client on a connection opened when first needed, and again after a failure to open it. */
function lazyClient(connect: () => Promise<ConnectionLike>, namespace: string) {
  let conn: Promise<ConnectionLike> | undefined;
  let client: Client | undefined;
  const connection = () => {
    conn ??= connect().catch((err) => {
      conn = undefined;
      throw err;
    });
    return conn;
  };
  return {
    connection,
    async client() {
      client ??= new Client({ connection: await connection(), namespace });
      return client;
    },
    async close() {
      // A connection still opening to a Temporal that is away has nothing to close.
      const opened = await conn?.catch(() => undefined);
      await opened?.close().catch(() => undefined);
    },
  };
}

export function createTemporalGateway(cfg: TemporalGatewayConfig): TemporalGateway {
  const timeoutMs = cfg.timeoutMs ?? 10_000;
  const eagerConnect = cfg.eager?.connect;
  const own = lazyClient(() => Connection.connect({ address: cfg.address, connectTimeout: Math.min(timeoutMs, 2000) }), cfg.namespace);
  const eager = eagerConnect ? { queues: new Set(cfg.eager!.taskQueues), ...lazyClient(eagerConnect, cfg.namespace) } : undefined;
  const pollerCache = new Map<string, { at: number; value: boolean }>();
  const connection = own.connection;
  /** Runs a call on a connection; whatever is not Temporal's answer means it is unavailable. */
  const bounded = async (f: (c: ConnectionLike, cl: Client) => Promise<void>, via: ReturnType<typeof lazyClient> = own) => {
    try {
      const c = await via.connection();
      await f(c, await via.client());
    } catch (err) {
      if (isAnswer(err)) throw err;
      throw new DependencyUnavailable('temporal', err);
    }
  };
  return {
    client: own.client,
    async startWorkflow(workflow, options, opts = {}) {
      // (A wait for a previous run of the id reads a deadline: on the gateway's own connection.)
      const eagerly = !opts.awaitPreviousMs && eager?.queues.has(options.taskQueue) ? eager : undefined;
      await bounded(async (c, cl) => {
        const start = () => c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.start(workflow, eagerly ? { ...options, requestEagerStart: true } : options));
        try {
          await start();
        } catch (err) {
          if (!(err instanceof WorkflowExecutionAlreadyStartedError) || !opts.awaitPreviousMs) throw err;
          await c.withDeadline(Date.now() + opts.awaitPreviousMs, () => cl.workflow.getHandle(options.workflowId).result()).catch((e) => {
            // Closed, however it ended: the id is free.
            if (!(e instanceof WorkflowFailedError)) throw e;
          });
          await start();
        }
      }, eagerly);
    },
    async executeWorkflow<W extends Workflow>(workflow: W, options: WorkflowStartOptions<W>, waitMs: number, opts: { join?: boolean } = {}) {
      let result: WorkflowResultType<W> | undefined;
      await bounded(async (c, cl) => {
        const handle = await c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.start(workflow, options)).catch((err) => {
          if (opts.join && err instanceof WorkflowExecutionAlreadyStartedError) return cl.workflow.getHandle<W>(options.workflowId);
          throw err;
        });
        result = await c.withDeadline(Date.now() + waitMs, () => handle.result()).catch((err) => {
          if (isGrpcDeadlineError(err) || isGrpcDeadlineError((err as Error)?.cause)) throw new WorkflowStillRunning(options.workflowId);
          throw err;
        });
      });
      return result as WorkflowResultType<W>;
    },
    async cancelWorkflow(workflowId) {
      await bounded(async (c, cl) => {
        await c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.getHandle(workflowId).cancel()).catch((err) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
      });
    },
    async signalWorkflow<Args extends unknown[]>(workflowId: string, signal: SignalDefinition<Args>, args: Args) {
      await bounded(async (c, cl) => {
        await c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.getHandle(workflowId).signal(signal, ...args)).catch((err) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
      });
    },
    async executeUpdate<R, Args extends unknown[]>(workflowId: string, update: UpdateDefinition<R, Args>, args: Args, opts: { updateId?: string } = {}): Promise<R> {
      let result: R;
      await bounded(async (c, cl) => {
        // The client's overloads split updates with and without arguments; the definition
        // has typed them already.
        const def = update as unknown as UpdateDefinition<R, [unknown]>;
        result = await c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.getHandle(workflowId).executeUpdate(def, { args: args as unknown as [unknown], ...(opts.updateId ? { updateId: opts.updateId } : {}) }));
      });
      return result!;
    },
    async signalWithStart(workflow, signal, signalArgs, options) {
      await bounded(async (c, cl) => {
        // The client's options type splits on whether the workflow takes arguments, which a generic W cannot resolve.
        await c.withDeadline(Date.now() + timeoutMs, () => cl.workflow.signalWithStart(workflow, { ...options, signal, signalArgs } as never));
      });
    },
    ping: async () => {
      const c = await connection();
      await c.withDeadline(Date.now() + 2000, () => c.workflowService.getSystemInfo({}));
      return true;
    },
    hasPoller: async (taskQueue, kind) => {
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
    // The eager connection is its owner's (the worker's) to close.
    close: own.close,
  };
}
