import type { LoadedConfig } from "../config/index.js";
import { installCrashHandlers } from "../log/crash.js";
import { createRedactor, secretsOf } from "../log/redact.js";
import { createDaemon } from "../runtime.js";
import type { DaemonOptions } from "../daemon-types.js";
import type { RestartOrigin } from "../restart-origin.js";
import { readRestartRecord, reexec, writeRestartRecord } from "./restart.js";
import { exposedControlApi } from "../server/host-check.js";
import { startControlServer } from "../server/http.js";
import { takeOverFromAgent } from "./agent-record.js";
import { HOLDER_WAIT_MS } from "./client.js";
import { StoreLockedError } from "../errors.js";
import { ensureToken } from "../server/token.js";
import { chooseExecSandbox, sandboxNotice } from "../tools/bwrap.js";
import { checkGateway, removePidfile, writePidfile } from "./pidfile.js";

/** A gateway under systemd (Restart=always) exits with this to be started again (EX_TEMPFAIL). */
export const RESTART_EXIT_CODE = 75;

/** Past this, a shutdown that hangs is cut short. */
const SHUTDOWN_LIMIT_MS = 15_000;

/**
 * The daemon, taking the store over from an in-process `troupe agent` that lends it. Another chat
 * that went through that agent may open the store in the instant it is let go; it lends it in turn
 * (its agent.json appears), and is asked to hand over as well.
 */
async function openDaemon(loaded: LoadedConfig, consoleLogs: boolean, restart: Pick<DaemonOptions, "onRestart" | "restartedFrom">) {
  const say = (text: string) => console.log(text);
  const deadline = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    await takeOverFromAgent(loaded.paths, say);
    try {
      // fillWorkspace: nanobot's `gateway` makes what the workspace lacks from the templates (sync_workspace_templates).
      return await createDaemon(loaded, { consoleLogs, fillWorkspace: true, importNanobot: true, ...restart });
    } catch (err) {
      // Held by a running gateway: that is said at once (the error names its pid).
      if (!(err instanceof StoreLockedError) || Date.now() >= deadline || (await checkGateway(loaded.paths)).kind === "ours") throw err;
      // Held by another troupe command: a `troupe agent` lends it in a moment (its agent.json appears,
      // and it is asked to hand over above), or the command ends and lets go.
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * `troupe gateway [--port N]`: the daemon in the foreground (on port N instead of gateway.port). SIGTERM or SIGINT stops taking work, lets running
 * turns reach a checkpoint, closes the store and exits 0.
 */
export async function runGateway(loaded: LoadedConfig, opts: { consoleLogs: boolean; port?: number }): Promise<number> {
  const { paths, config } = loaded;
  let restartRequested: (from: RestartOrigin) => void = () => {};
  const restart = new Promise<RestartOrigin>((resolve) => (restartRequested = resolve));
  const restartedFrom = await readRestartRecord(paths);
  const daemon = await openDaemon(loaded, opts.consoleLogs, { onRestart: (from) => restartRequested(from), restartedFrom });
  // A rejection nobody handled is logged and the daemon serves on; an uncaught exception exits 1 (see crash.ts).
  installCrashHandlers({ logger: daemon.logger, redact: createRedactor(secretsOf(config)), name: "troupe gateway" });
  // Nothing to say about exec's sandbox when there is no exec tool.
  const notice = config.tools.exec.enable ? sandboxNotice(chooseExecSandbox(config.tools, process.env, paths.configFile)) : undefined;
  if (notice) daemon.logger.warn(notice);
  const unrunnable = loaded.unrunnableChannels ?? [];
  if (unrunnable.length > 0) {
    const warning = `enabled in config but troupe cannot run ${unrunnable.join(", ")}: ${unrunnable.length > 1 ? "they" : "it"} will not start`;
    console.error(`warning: ${warning}`);
    daemon.logger.warn(warning);
  }
  let server;
  try {
    const token = await ensureToken(paths.tokenFile);
    server = await startControlServer(daemon, { host: config.gateway.host, port: opts.port ?? config.gateway.port, token });
  } catch (err) {
    await daemon.shutdown();
    throw err;
  }
  const exposed = exposedControlApi(config.gateway.host, paths.tokenFile);
  if (exposed) {
    const warning = `${exposed.why}; ${exposed.fix}`;
    console.error(`warning: ${warning}`);
    daemon.logger.warn(warning);
  }
  await writePidfile(paths, { pid: process.pid, url: server.url, startedAt: Date.now() });
  daemon.logger.info({ url: server.url, pid: process.pid }, "gateway listening");
  console.log(`troupe gateway on ${server.url} (pid ${process.pid}); data in ${paths.dataDir}. Ctrl-C stops it.`);

  const reason = await Promise.race([
    new Promise<{ signal: NodeJS.Signals }>((resolve) => {
      process.once("SIGTERM", () => resolve({ signal: "SIGTERM" }));
      process.once("SIGINT", () => resolve({ signal: "SIGINT" }));
    }),
    restart.then((from) => ({ restart: from })),
  ]);
  daemon.logger.info(reason, "restart" in reason ? "shutting down to restart" : "shutting down");
  setTimeout(() => {
    console.error(`troupe gateway: shutdown took over ${SHUTDOWN_LIMIT_MS / 1000}s; exiting anyway`);
    process.exit(1);
  }, SHUTDOWN_LIMIT_MS).unref();
  await server.close();
  await daemon.shutdown();
  if ("restart" in reason) {
    // The next gateway tells the chat it is back; its turns resume from their checkpoints.
    await writeRestartRecord(paths, reason.restart);
    const next = await reexec(paths, server.url, config.gateway.restartMode);
    console.log(next.how === "spawned" ? `troupe gateway restarting as pid ${next.pid}` : "troupe gateway exiting to be restarted by its service manager");
    return next.how === "spawned" ? 0 : RESTART_EXIT_CODE;
  }
  await removePidfile(paths);
  console.log("troupe gateway stopped");
  return 0;
}
