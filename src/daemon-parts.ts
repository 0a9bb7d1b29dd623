// What only the daemon (createDaemon in runtime.ts) runs: channels, cron, heartbeat, subagents, upkeep,
// the actor tree. runtime.ts imports it when a daemon starts, so an in-process `troupe agent`
// (createAgentRuntime alone) does not initialise these modules (their XState machines, zod schemas):
// ~3 ms less module initialisation in a cold `troupe agent -m` (CPU profiles, medians of 8).
export { createTranscriber, resolveTranscription } from "./channels/transcription.js";
export { createChannelActor } from "../actors/channel.js";
export { createCronScheduler } from "../actors/cron.js";
export { createHeartbeat } from "../actors/heartbeat.js";
export { cronFinalOps, fireNow, unfinishedSystemRuns, finishRunOps } from "./cron/fire.js";
export { HEARTBEAT_SESSION, pickHeartbeatTarget } from "./cron/heartbeat.js";
export { trackLastChat } from "./cron/last-chat.js";
export { NO_CHAT } from "./cron/jobs.js";
export { createCronService } from "./cron/service.js";
export { createSlots } from "../actors/slot.js";
export { createSubagentPool } from "../actors/subagents.js";
export { createSessionHost } from "../actors/session-host.js";
export { createApiChannel } from "./channels/api.js";
export { sessionsToRecover } from "./store/recovery.js";
export { startUpkeep } from "./store/upkeep.js";
export { turnDetail } from "./server/turn-view.js";
export { spawnTool, subagentsTool } from "./tools/builtin/spawn.js";
export { createLimiter } from "./limiter.js";
export { createActorTree } from "./server/actor-tree.js";
export { createEventLog } from "./server/event-log.js";
export { createSupervisor } from "../actors/supervisor-logic.js";
export { createDaemonRuns } from "./daemon-runs.js";
export { createDaemonRecovery } from "./daemon-recovery.js";
