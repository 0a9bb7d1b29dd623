import { accessSync, constants, existsSync, statfsSync } from "node:fs";
import { createServer } from "node:net";
import { basename, dirname } from "node:path";
import { Api, GrammyError, HttpError } from "grammy";
import { z } from "zod";
import { loadConfig, type LoadedConfig } from "../config/index.js";
import { variableAt } from "../config/env.js";
import { ConfigError, StoreLockedError, TroupeError } from "../errors.js";
import { createRedactor, secretsOf } from "../log/redact.js";
import { certificateProblem, describeNetworkError, rootCause } from "../net-errors.js";
import { dataPaths, type DataPaths } from "../paths.js";
import { proxyAgent } from "../channels/telegram-net.js";
import { createHttpTransport, readText } from "../providers/transport.js";
import { chatEndpoint, resolveProvider } from "../providers/registry.js";
import { showKey } from "../session-key.js";
import { sessionsOverview } from "../store/session-view.js";
import { openStore } from "../store/store.js";
import { REPAIR_COMMAND, StoreDamagedError } from "../store/damage.js";
import { floorBytes, type SpaceFloor } from "../store/disk.js";
import { repairStore, storeSize } from "../store/repair.js";
import { exposedControlApi } from "../server/host-check.js";
import { describeExecIsolation } from "../tools/exec-isolation.js";
import { readPidfile } from "./pidfile.js";

export interface CheckResult {
  name: string;
  /** "warn": works, in a way the user should know about (not a failure: the exit code stays 0). */
  status: "ok" | "warn" | "fail" | "skip";
  detail: string;
  /** What to do about a failure or a warning. */
  fix?: string;
}

const ok = (name: string, detail: string): CheckResult => ({ name, status: "ok", detail });
const fail = (name: string, detail: string, fix?: string): CheckResult => ({ name, status: "fail", detail, fix });
const skip = (name: string, detail: string): CheckResult => ({ name, status: "skip", detail });

/** How long a network check waits for an answer. */
const NETWORK_TIMEOUT_MS = 20_000;
/** Below this much free space a full disk is near: checkpoints that cannot be written crash sessions. */
const MIN_FREE_BYTES = 200 * 1024 * 1024;

const size = (bytes: number) =>
  bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : bytes >= 1024 ** 2 ? `${Math.round(bytes / 1024 ** 2)} MiB` : `${Math.round(bytes / 1024)} KiB`;

/** The running gateway of this data dir, if its /health answers with the pid it recorded. */
async function runningDaemon(paths: DataPaths): Promise<{ pid: number; url: string } | undefined> {
  const info = await readPidfile(paths);
  if (!info) return undefined;
  try {
    const res = await fetch(`${info.url}/health`, { signal: AbortSignal.timeout(2_000) });
    const health = (await res.json()) as { pid?: number };
    return (res.ok || res.status === 503) && health.pid === info.pid ? info : undefined;
  } catch {
    return undefined;
  }
}

function checkConfig(paths: DataPaths, loaded: LoadedConfig | undefined, error: unknown): CheckResult[] {
  if (error instanceof ConfigError) return error.problems.map((p) => fail("config", `${paths.configFile}: ${p}`, `fix it in ${paths.configFile}`));
  if (error) return [fail("config", `${paths.configFile}: ${(error as Error).message}`)];
  if (!loaded?.fromFile) return [fail("config", `${paths.configFile} does not exist`, "run troupe onboard")];
  const notes = loaded.warnings.length ? ` (${loaded.warnings.join("; ")})` : "";
  return [ok("config", `${paths.configFile} is valid${notes}`)];
}

/** Why a request never got an answer, in words: a timeout, else as the model calls and MCP say it (src/net-errors.ts). */
function networkReason(err: unknown, url: string): string {
  const name = (err as { name?: string }).name;
  if (name === "TimeoutError" || name === "AbortError") return `no answer from ${url} within ${NETWORK_TIMEOUT_MS / 1000}s`;
  return describeNetworkError(err, url) ?? `cannot reach ${url}: ${rootCause(err) ?? String(err)}`;
}

/** The provider answers one tiny completion (one token) with the configured key and model. */
async function checkProvider(loaded: LoadedConfig): Promise<CheckResult> {
  let resolved;
  try {
    resolved = resolveProvider(loaded.config, loaded.paths.configFile);
  } catch (err) {
    return fail("provider", (err as Error).message);
  }
  const { spec, apiBase, model } = resolved;
  const { url, headers, body } = chatEndpoint(resolved);
  // A value an environment variable set is not the file's: say which variable (never its value).
  const key = resolved.configKey ?? spec.name;
  const file = basename(loaded.paths.configFile);
  const fromEnv = (field: string) => variableAt(loaded.envSources, ["providers", key, field]);
  const sources = ["apiBase", "apiKey"].flatMap((f) => {
    const v = fromEnv(f);
    return v ? [`${f} from ${v.override ? v.name : `\${${v.name}} in ${file}`}`] : [];
  });
  const via = sources.length ? ` (${sources.join("; ")})` : "";
  const check = (field: string) => {
    const v = fromEnv(field);
    const at = `providers.${key}.${field}`;
    return !v ? at : v.override ? `${v.name} (it overrides ${at} in ${file})` : `${v.name} (${at} in ${file} takes its value)`;
  };
  const started = Date.now();
  // The model calls' own transport: doctor reaches the endpoint exactly as a turn would.
  const transport = createHttpTransport();
  let res: { status: number; ok: boolean };
  let text: string;
  try {
    const payload = JSON.stringify({ ...body, messages: [{ role: "user", content: "ping" }], max_tokens: 1, stream: false });
    const reply = await transport.post(new URL(url), { "content-type": "application/json", ...headers }, payload, AbortSignal.timeout(NETWORK_TIMEOUT_MS), () => {});
    res = { status: reply.status, ok: reply.status >= 200 && reply.status < 300 };
    text = await readText(reply.body, () => {}).catch(() => "");
  } catch (err) {
    const certificate = certificateProblem(err, apiBase);
    if (certificate) return fail("provider", `${certificate.reason}${via}`, certificate.fix);
    return fail("provider", `${networkReason(err, apiBase)}${via}`, `is the server up? check ${check("apiBase")}`);
  } finally {
    transport.close();
  }
  if (res.ok) return ok("provider", `${spec.name} at ${apiBase} answered (model ${model}) in ${Date.now() - started} ms${via}`);
  let reason = "";
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
    reason = typeof body.error === "string" ? body.error : (body.error?.message ?? body.message ?? "");
  } catch {
    reason = text.slice(0, 200);
  }
  const said = `HTTP ${res.status} from ${url}${reason ? ` (${reason.replace(/\s+/g, " ").trim()})` : ""}${via}`;
  if (res.status === 401 || res.status === 403) return fail("provider", said, `check ${check("apiKey")}`);
  if (res.status === 404) return fail("provider", said, `check ${check("apiBase")} and the model name agents.defaults.model (${loaded.config.agents.defaults.model})`);
  if (res.status === 429) return fail("provider", said, "rate limited or out of quota: check the account's plan and usage");
  return fail("provider", said, `check agents.defaults.model and providers.${key}`);
}

/** The gateway's port is free (or held by this data dir's own daemon), on loopback: a wider bind is a warning with the fix. */
async function checkGateway(loaded: LoadedConfig): Promise<CheckResult> {
  const r = await checkGatewayPort(loaded);
  const exposed = exposedControlApi(loaded.config.gateway.host, loaded.paths.tokenFile);
  return r.status === "ok" && exposed ? { ...r, status: "warn", detail: `${r.detail}; ${exposed.why}`, fix: exposed.fix } : r;
}

/** The gateway's port is free, or held by this data dir's own daemon. */
async function checkGatewayPort(loaded: LoadedConfig): Promise<CheckResult> {
  const { host, port } = loaded.config.gateway;
  if (port === 0) return ok("gateway", `port 0 on ${host}: a free port is taken at each start`);
  const code = await new Promise<string | undefined>((resolve) => {
    const server = createServer();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(port, host, () => server.close(() => resolve(undefined)));
  });
  if (!code) return ok("gateway", `port ${port} on ${host} is free`);
  if (code === "EADDRINUSE") {
    const daemon = await runningDaemon(loaded.paths);
    if (daemon && new URL(daemon.url).port === String(port)) return ok("gateway", `port ${port} on ${host} is held by the troupe daemon (pid ${daemon.pid})`);
    return fail("gateway", `port ${port} on ${host} is in use by another program`, "stop it, or set gateway.port in config.json to a free port");
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") return fail("gateway", `gateway.host ${host} is not an address of this machine`, "set gateway.host to 127.0.0.1");
  if (code === "EACCES") return fail("gateway", `port ${port} on ${host} needs privileges`, "set gateway.port above 1023");
  return fail("gateway", `cannot listen on ${host}:${port}: ${code}`);
}

/** Telegram accepts the token (getMe), through the configured proxy. */
async function checkTelegram(loaded: LoadedConfig): Promise<CheckResult> {
  const tg = loaded.config.channels.telegram;
  if (!tg.enabled) return skip("telegram", "not enabled (channels.telegram.enabled)");
  if (!tg.token) return fail("telegram", "enabled without a token", "set channels.telegram.token to the token @BotFather gave you");
  const agent = proxyAgent(tg.proxy, tg.apiRoot);
  const api = new Api(tg.token, { apiRoot: tg.apiRoot, timeoutSeconds: NETWORK_TIMEOUT_MS / 1000, ...(agent ? { baseFetchConfig: { agent } as never } : {}) });
  try {
    const me = await api.getMe();
    const nobody = tg.allowFrom.length === 0 ? "; channels.telegram.allowFrom is empty, so nobody may talk to it" : "";
    return ok("telegram", `token accepted (@${me.username})${nobody}`);
  } catch (err) {
    if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) {
      return fail("telegram", `token rejected (${err.error_code})`, "check channels.telegram.token (the token @BotFather gave you)");
    }
    if (err instanceof HttpError) return fail("telegram", `cannot reach ${tg.apiRoot}: ${(err.error as Error)?.message ?? err.message}`, "check the network, or channels.telegram.proxy");
    return fail("telegram", `getMe failed: ${(err as Error).message}`);
  }
}

/** The store opens and its records read, or the running daemon holds it. */
async function checkStore(paths: DataPaths): Promise<CheckResult> {
  const daemon = await runningDaemon(paths);
  if (daemon) return ok("store", `${paths.storeDir} is held by the running daemon (pid ${daemon.pid})`);
  if (!existsSync(paths.storeDir)) return ok("store", `${paths.storeDir} not created yet (the first start creates it)`);
  let store;
  try {
    store = await openStore(paths.storeDir, { readOnly: true });
  } catch (err) {
    if (err instanceof StoreLockedError) return ok("store", `${paths.storeDir} is in use by another troupe process${err.holderPid ? ` (pid ${err.holderPid})` : ""}; not read`);
    if (err instanceof StoreDamagedError) return fail("store", `damaged: ${err.damage} (${paths.storeDir}, ${size(await storeSize(paths.storeDir))})`, `repair it with ${REPAIR_COMMAND} (it copies the store aside first)`);
    return fail("store", `${paths.storeDir} does not open: ${(err as Error).message}`, `try ${REPAIR_COMMAND}; or move ${paths.storeDir} aside to start afresh, or restore a backup`);
  }
  try {
    // Listings skip corrupt records; the doctor's job is to name them.
    const { sessions, corrupt } = await sessionsOverview(store);
    const undelivered = (await store.list("outbox", z.unknown(), { onCorrupt: (r) => corrupt.push(r) })).length;
    if (corrupt.length > 0) {
      const first = corrupt[0]!;
      return fail(
        "store",
        `${paths.storeDir}: ${corrupt.length} corrupt record(s), the first ${first.sublevel}/${showKey(first.key)}: ${first.problem}`,
        "troupe sessions delete KEY removes a broken session",
      );
    }
    const interrupted = sessions.reduce((n, s) => n + s.interrupted, 0);
    return ok("store", `ok, ${size(await storeSize(paths.storeDir))} at ${paths.storeDir}: ${sessions.length} session(s), ${interrupted} interrupted turn(s), ${undelivered} undelivered message(s)`);
  } catch (err) {
    return fail("store", `${paths.storeDir}: ${(err as Error).message}`, "troupe sessions delete KEY removes a broken session");
  } finally {
    await store.close();
  }
}

/** exec's commands run in bubblewrap, or unsandboxed on purpose (warned when auto found no bwrap or restrictToWorkspace is off; failed when exec cannot run). */
function checkExec(loaded: LoadedConfig, env: NodeJS.ProcessEnv): CheckResult {
  const r = describeExecIsolation(loaded.config.tools, env, loaded.paths.configFile);
  return { name: "exec", status: r.level, detail: r.text, ...(r.fix ? { fix: r.fix } : {}) };
}

/** Room on the data dir's disk (the floor is storage.freeSpaceFloorMB / freeSpaceFloorPercent), and the right to write there. */
function checkDisk(paths: DataPaths, floor: SpaceFloor | undefined): CheckResult {
  let dir = paths.dataDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return fail("disk", `${dir} is not writable`, "fix its permissions, or set TROUPE_HOME to a directory you can write");
  }
  const fs = statfsSync(dir);
  const free = fs.bavail * fs.bsize;
  const limit = floor ? floorBytes({ free, size: fs.blocks * fs.bsize }, floor) : MIN_FREE_BYTES;
  if (free < limit) return fail("disk", `only ${size(free)} free under ${paths.dataDir} (floor ${size(limit)})`, "free some space: on a full disk troupe refuses new messages until space is freed");
  return ok("disk", `${size(free)} free under ${paths.dataDir} (of ${size(fs.blocks * fs.bsize)})`);
}

/** Every check, in a fixed order; those that need a valid config are skipped without one. */
/** nanobot's sessions and cron jobs: imported (ok), or waiting for the first start (a warning); listed only when there are some. */
async function checkNanobotLeftovers(workspace: string, dataDir: string): Promise<CheckResult | undefined> {
  const { nanobotLine, LEFTOVERS_FIX } = await import("./nanobot-leftovers.js");
  const found = await nanobotLine(workspace, dataDir);
  if (!found) return undefined;
  return found.imported ? { name: "nanobot", status: "ok", detail: found.line } : { name: "nanobot", status: "warn", detail: found.line, fix: LEFTOVERS_FIX };
}

export async function doctorChecks(env: NodeJS.ProcessEnv = process.env): Promise<CheckResult[]> {
  const paths = dataPaths(env);
  let loaded: LoadedConfig | undefined;
  let error: unknown;
  try {
    loaded = await loadConfig(env);
  } catch (err) {
    error = err;
  }
  const needsConfig = (name: string, check: (l: LoadedConfig) => Promise<CheckResult>) =>
    loaded ? check(loaded) : Promise.resolve(skip(name, "needs a valid config"));
  const [provider, gateway, telegram, store] = await Promise.all([
    needsConfig("provider", checkProvider),
    needsConfig("gateway", checkGateway),
    needsConfig("telegram", checkTelegram),
    checkStore(paths),
  ]);
  const exec = loaded ? checkExec(loaded, env) : skip("exec", "needs a valid config");
  const nanobot = loaded ? await checkNanobotLeftovers(loaded.workspace, paths.dataDir) : undefined;
  const results = [...checkConfig(paths, loaded, error), provider, gateway, telegram, store, checkDisk(paths, loaded?.config.storage), exec, ...(nanobot ? [nanobot] : [])];
  // What a check quotes (an error's message, a URL) may hold a key or the bot token (Telegram's URLs
  // carry it): scrubbed as the logs are, since a doctor's output is what users paste into reports.
  const redact = createRedactor(loaded ? secretsOf(loaded.config) : []);
  return results.map((r) => ({ ...r, detail: redact(r.detail), ...(r.fix ? { fix: redact(r.fix) } : {}) }));
}

export const checkLine = (r: CheckResult) => `${(r.status === "fail" ? "FAIL" : r.status).padEnd(4)}  ${r.name}: ${r.detail}${r.fix ? `: ${r.fix}` : ""}`;

/** `troupe doctor`: one line per check; exit 1 when any failed (a warning alone does not). */
export async function doctor(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const results = await doctorChecks(env);
  for (const r of results) console.log(checkLine(r));
  const failed = results.filter((r) => r.status === "fail").length;
  const warned = results.filter((r) => r.status === "warn").length;
  const warnings = warned ? `${warned} warning${warned > 1 ? "s" : ""}` : "";
  console.log(failed ? `${failed} check(s) failed${warned ? `; ${warnings}` : ""}` : warned ? `no check failed; ${warnings}` : "all checks passed");
  return failed ? 1 : 0;
}

/**
 * `troupe doctor --repair`: copies the store aside, runs LevelDB's repair on it, and says how many
 * sessions and turns it reads back. Refused while a troupe process holds the store.
 */
export async function doctorRepair(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paths = dataPaths(env);
  const daemon = await runningDaemon(paths);
  if (daemon) throw new TroupeError(`the daemon (pid ${daemon.pid}) holds ${paths.storeDir}; stop it first (troupe daemon stop), then run troupe doctor --repair`);
  if (!existsSync(paths.storeDir)) {
    console.log(`no store at ${paths.storeDir}: nothing to repair`);
    return 0;
  }
  const report = await repairStore(paths.storeDir);
  console.log(`copied the store aside to ${report.copy}`);
  console.log(`repaired ${paths.storeDir}: ${report.sessions} session(s) and ${report.turns} turn(s) read back${report.corrupt ? `; ${report.corrupt} record(s) still do not read (troupe doctor names them)` : ""}`);
  return 0;
}
