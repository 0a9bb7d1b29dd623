import type { SessionHost } from "../actors/session-host.js";
import type { SubagentPool } from "../actors/subagents.js";
import type { SupervisorActor } from "../actors/supervisor-logic.js";
import type { SupervisionPolicy } from "../machines/supervision.js";
import type { AgentRuntime, RuntimeOptions } from "./agent-runtime.js";
import type { Channel, ChannelInbound } from "./channels/channel.js";
import type { Transcriber } from "./channels/transcription.js";
import type { LoadedConfig } from "./config/index.js";
import type { StartedRun } from "./cron/fire.js";
import type { CronService } from "./cron/service.js";
import type { Limiter } from "./limiter.js";
import type { RestartOrigin } from "./restart-origin.js";
import type { ActorTree } from "./server/actor-tree.js";
import type { EventLog } from "./server/event-log.js";
import type { StoreHealthSnapshot } from "./store/health.js";
import type { DiskState } from "./store/upkeep.js";

/** The daemon's options and what a running daemon offers (the control API, the CLI and the tests use it); createDaemon (runtime.ts) builds it. */

export interface DaemonOptions extends RuntimeOptions {
  channels?: Channel[];
  policy?: Partial<SupervisionPolicy>;
  /** How long running turns get to finish on shutdown before they are stopped at their last checkpoint. */
  shutdownGraceMs?: number;
  /** Telegram polling knobs (tests shorten them). */
  telegram?: { pollTimeoutS?: number; baseBackoffMs?: number; watchdogGraceS?: number };
  /** How long seen:/sent: markers are kept (default 7 days); pruned at start and every hour. */
  markerRetentionMs?: number;
  /** /restart: the gateway restarts the process (after a clean shutdown). Without it /restart says it cannot. */
  onRestart?: (from: RestartOrigin) => void;
  /** This daemon is the one a /restart started: that chat is told the restart completed. */
  restartedFrom?: RestartOrigin;
}

export interface Daemon extends AgentRuntime {
  loaded: LoadedConfig;
  supervisor: SupervisorActor;
  /** The live session actors (each its own actor system; the supervisor keeps their records). */
  sessions: SessionHost;
  subagents: SubagentPool;
  tree: ActorTree;
  /** The last minutes of actor events, for `/api/events?since=`. */
  events: EventLog;
  limiter: Limiter;
  /** Cron jobs (add, list, remove, enable); changes re-arm the scheduler. */
  cron: CronService;
  /** Runs a job now, outside its schedule; undefined when there is no such job. */
  runCronJob(id: string): Promise<StartedRun | undefined>;
  /** Each channel's state, for `troupe daemon start` and `status`. */
  channels(): ChannelState[];
  /** Takes a message from a channel into the system; resolves with its id once it is routed. */
  accept(channel: string, message: ChannelInbound): Promise<string>;
  /** Speech to text for every channel's voice and audio (channels.transcription*). */
  transcriber: Transcriber;
  /** The store's health and the free space under the data dir (last measured), for /health and status. */
  storage(): StorageState;
  /** Runs the store's upkeep now (old seen/sent markers pruned, finished turns' journals compacted); it also runs at start and hourly. */
  upkeep(): Promise<void>;
  /** Stops taking work, lets running turns reach a checkpoint, stops every actor, closes the store. */
  shutdown(): Promise<void>;
}

export interface StorageState {
  store: StoreHealthSnapshot;
  disk: DiskState;
}

export interface ChannelState {
  name: string;
  /** backing_off: started, but it cannot reach its platform (it retries with backoff). */
  state: "starting" | "started" | "backing_off" | "restarting" | "failed";
  error: string | null;
  /** Backing off: since its first failure, and how many in a row. */
  since?: number;
  failures?: number;
}
