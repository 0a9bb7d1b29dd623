import { workspaceHooksDir } from "../../hooks/load.js";
import { homedir } from "node:os";
import type { Bus } from "../../bus/index.js";
import type { Config } from "../../config/schema.js";
import { BUILTIN_SKILLS_DIR } from "../../context/templates.js";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../package-root.js";
import type { DataPaths } from "../../paths.js";
import type { Store } from "../../store/store.js";
import { chooseExecSandbox, type ExecIsolation } from "../bwrap.js";
import type { Tool } from "../contract.js";
import type { Sandbox } from "../sandbox.js";
import { startEgressProxy, type EgressProxy } from "../egress-proxy.js";
import { createSsrfGuard } from "../ssrf.js";
import { createFileReads } from "../file-reads.js";
import { editFileTool } from "./edit-file.js";
import { execTool } from "./exec.js";
import { compileAllowPatterns, compilePatterns, DEFAULT_DENY_PATTERNS } from "./exec-guard.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import { listDirTool } from "./list-dir.js";
import { messageTool } from "./message.js";
import { readFileTool } from "./read-file.js";
import { webFetchTool } from "./web-fetch.js";
import { testEndpoints, webSearchTool } from "./web-search.js";
import { writeFileTool } from "./write-file.js";

export interface BuiltinToolDeps {
  config: Config;
  workspace: string;
  /** The data dir (hidden from exec's sandbox: config.json, gateway.token, the store) and its media dir. */
  paths: Pick<DataPaths, "dataDir" | "mediaDir" | "configFile">;
  store: Store;
  bus?: Bus;
  /** Channels the message tool may target. */
  channels: () => string[];
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

/** Every built-in tool, configured from config.tools. */
export function createBuiltinTools(deps: BuiltinToolDeps): Tool[] {
  const t = deps.config.tools;
  const env = deps.env ?? process.env;
  const { mediaDir } = deps.paths;
  const sandbox: Sandbox = {
    workspace: deps.workspace,
    restrict: t.restrictToWorkspace,
    readableRoots: [BUILTIN_SKILLS_DIR, mediaDir],
    readOnlyInside: [workspaceHooksDir(deps.workspace)],
    allowHardLinks: t.allowHardLinks,
  };
  const choice = chooseExecSandbox(t, env, deps.paths.configFile);
  // The data dir holds config.json (api keys) and gateway.token (the control API); the home, the user's own keys;
  // a config file given with --config may live elsewhere (/etc/troupe/config.json).
  const home = env.HOME || homedir();
  const hide = [deps.paths.dataDir, ...(home && home !== "/" ? [home] : []), deps.paths.configFile];
  const guard = createSsrfGuard(t.ssrfWhitelist);
  // The sandbox's only way out is the egress proxy, started at the first sandboxed command. Its
  // forwarder runs on this node binary, so a node the sandbox cannot see (under the home) means no network.
  let proxy: Promise<EgressProxy> | undefined;
  const egress = () => (proxy ??= startEgressProxy(guard)).then((p) => p.socketPath);
  const isolation: ExecIsolation =
    choice.kind === "bwrap"
      ? {
          kind: "bwrap",
          bin: choice.bin,
          hide,
          // troupe's own packages too, read-only: the built-in skills' scripts load them (yaml, fflate, the proxy agents)
          // wherever troupe is installed, also under a /tmp or a home the sandbox replaces.
          readable: [...sandbox.readableRoots, ...(sandbox.readOnlyInside ?? []), join(PACKAGE_ROOT, "node_modules")],
          egress,
          node: process.execPath,
        }
      : { kind: "none" };
  // What read_file and write_file saw in each turn, for edit_file's "not read in this turn" warning.
  const reads = createFileReads();
  const tools = [
    readFileTool(sandbox, reads),
    writeFileTool(sandbox, reads),
    editFileTool(sandbox, reads),
    listDirTool(sandbox),
    globTool(sandbox),
    grepTool(sandbox),
    execTool({
      sandbox,
      policy: {
        deny: compilePatterns([...DEFAULT_DENY_PATTERNS, ...t.exec.denyPatterns]),
        allow: compileAllowPatterns(t.exec.allowPatterns),
        restrict: t.restrictToWorkspace,
        // Built-in skills' scripts are run by their path; the sandbox mounts them read-only.
        roots: [deps.workspace, mediaDir, BUILTIN_SKILLS_DIR],
        readOnlyRoots: [BUILTIN_SKILLS_DIR],
      },
      defaultTimeout: t.exec.timeout,
      pathAppend: t.exec.pathAppend,
      allowedEnvKeys: t.exec.allowedEnvKeys,
      env,
      isolation,
      urlGuard: guard,
    }),
    webFetchTool({ guard, proxy: t.web.proxy, userAgent: t.web.userAgent, mediaDir }),
    webSearchTool({
      ...t.web.search,
      timeoutS: t.web.search.timeout,
      proxy: t.web.proxy,
      userAgent: t.web.userAgent,
      env,
      endpoints: testEndpoints(env),
    }),
    messageTool({ store: deps.store, bus: deps.bus, sandbox, channels: deps.channels, now: deps.now }),
  ];
  // nanobot's tools.exec.enable / tools.web.enable switch those tools off.
  const off = new Set([...(t.exec.enable ? [] : ["exec"]), ...(t.web.enable ? [] : ["web_fetch", "web_search"])]);
  return tools.filter((tool) => !off.has(tool.name));
}
