import { mkdir } from "node:fs/promises";
import type { LoadedConfig } from "./config/index.js";
import { fillWorkspace } from "./context/templates.js";
import { workspaceHooksDir } from "./hooks/load.js";
import type { Logger } from "./log/logger.js";
import { resolveProvider, type ResolvedProvider } from "./providers/registry.js";
import { openStore, type Store, type StoreOptions } from "./store/store.js";
import { chooseExecSandbox, unisolatedNotice } from "./tools/bwrap.js";

/**
 * The first steps of an agent runtime (src/agent-runtime.ts), in a module of their own so a command
 * can take them before it loads the rest of the runtime's code: what a bad config fails on, checked
 * before anything is opened; then the workspace, and the store's open started.
 *
 * LevelDB opens on a thread of its own, and a fresh store's open is mostly waiting for the disk
 * (its first fdatasync): `troupe agent` loads the runtime's modules meanwhile (see `underWay`).
 */
export interface RuntimeStart {
  resolved: ResolvedProvider;
  /** The warning to give once, at start, when exec will run its commands unsandboxed because auto found no bwrap. */
  execNotice?: string;
  /** Where the store reports (its disk probe) from now on: the runtime's logger, made while the store opens. */
  useLogger(logger: Logger): void;
  /** The store, once open (rejects as openStore does: locked, damaged...; or as making the workspace did, before it is opened). */
  store: Promise<Store>;
  /**
   * Settles once LevelDB is opening the store on its thread (or the open has already failed): code
   * loaded after this runs while the disk works, not before the open has begun.
   */
  underWay: Promise<void>;
  /** Closes the store when the runtime was not built after all (an error while loading or building it). */
  abandon(): Promise<void>;
  /** The workspace files made from the templates (with `fillWorkspace`), settled before the store opens. */
  filled: Promise<string[]>;
}

export interface StartOptions {
  /**
   * Make what the workspace lacks from the templates, never overwriting (nanobot's `agent` and
   * `gateway` run sync_workspace_templates): the commands ask for it, a runtime built in a test does not.
   */
  fillWorkspace?: boolean;
}

export function startAgentRuntime(loaded: LoadedConfig, opts: StartOptions = {}): RuntimeStart {
  const { config, paths, workspace } = loaded;
  // Resolve the provider first: a missing key should fail before anything is opened.
  const resolved = resolveProvider(config, paths.configFile);
  // tools.exec.sandbox "bwrap" with no bwrap installed: the same, before the store is opened.
  const execNotice = unisolatedNotice(config.tools.exec.enable, chooseExecSandbox(config.tools, process.env, paths.configFile));
  // The store reports only a failing disk, which it can meet only once it is open and written to: by
  // then the runtime has given it its logger.
  let logger: Logger | undefined;
  const log: NonNullable<StoreOptions["log"]> = {
    error: (obj, msg) => logger?.error(obj, msg),
    warn: (obj, msg) => logger?.warn(obj, msg),
    info: (obj, msg) => logger?.info(obj, msg),
  };
  // Present from the start, so the exec sandbox binds it read-only: a command cannot create it and plant a hook.
  // After the checks above: a config that cannot run leaves the workspace alone.
  const workspaceReady = (async () => {
    await mkdir(workspace, { recursive: true });
    await mkdir(workspaceHooksDir(workspace), { recursive: true });
    return opts.fillWorkspace ? (await fillWorkspace(workspace)).created : [];
  })();
  let opening!: () => void;
  const onOpening = new Promise<void>((resolve) => (opening = resolve));
  const store = workspaceReady.then(() => openStore(paths.storeDir, { log, probe: { maxMs: config.storage.probeMaxSeconds * 1000 }, onOpening: opening }));
  // Handled where it is awaited; until then a failure must not count as unhandled.
  store.catch(noop);
  // classic-level makes the store's directory (one trip to libuv's threads) before it calls LevelDB:
  // one turn of the event loop after that lets it do so.
  const underWay = Promise.race([onOpening.then(() => new Promise<void>((resolve) => setImmediate(resolve))), store.then(noop, noop)]);
  return {
    resolved,
    execNotice,
    useLogger: (l) => (logger = l),
    store,
    underWay,
    abandon: () => store.then((s) => s.close(), noop),
    // Awaited only once the store is open, which waited for it: its failure is the store's.
    filled: workspaceReady.catch(() => []),
  };
}

function noop(): void {}
