import { Command } from "commander";
import { TroupeError } from "../errors.js";
import { applyInstanceOptions, dataPaths } from "../paths.js";
import { VERSION } from "../version.js";
import { defineCommandsAfter, defineCommandsBefore, loadForCli, parseSessionKey } from "./commands.js";

// Every command imports what it uses when it runs: `troupe --version` loads commander and nothing else.

// `troupe … | head`: a reader that stops early is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

const program = new Command()
  .name("troupe")
  .description("A personal AI agent runtime, run as a supervised actor system")
  .version(VERSION, "-v, --version")
  // Before or after the command name, as nanobot's: several instances side by side, each with its own config and data.
  .option("-c, --config <path>", "the config file; the instance's data (store, logs, daemon.pid) lives in its directory unless TROUPE_HOME says otherwise")
  .option("-w, --workspace <dir>", "the workspace (instead of agents.defaults.workspace)")
  .hook("preAction", (root: Command) => applyInstanceOptions(root.opts<{ config?: string; workspace?: string }>()))
  .showHelpAfterError()
  .addHelpText(
    "after",
    () => `
Examples:
  troupe onboard                     write config.json and the workspace (on a terminal: asks for provider, key, model)
  troupe agent -m "What is in my workspace?"
  troupe agent                       chat; /new, /stop, /status, /help; Ctrl-C cancels a turn, Ctrl-D exits
  troupe daemon start                run in the background, then: troupe daemon status, troupe daemon logs -f
  troupe --config ~/work/config.json daemon start    a second instance: its data beside that config
  troupe sessions show cli:direct --all
  troupe doctor                      check config, provider, port, Telegram, store and disk
  troupe doctor --repair             repair a damaged store (copied aside first)
  source <(troupe completion bash)   tab completion (zsh: troupe completion zsh)

Data dir: ${dataPaths(process.env).dataDir} (config.json, store/, logs/, workspace/)

Environment:
  TROUPE_HOME                        the data dir (default ~/.troupe, or the directory of --config)
  TROUPE_CONFIG                      the config file (what --config sets)
  TROUPE_<KEY>__<KEY>=value          overrides a config key, __ between levels, e.g.
                                     TROUPE_PROVIDERS__OPENAI__API_KEY=sk-...  TROUPE_AGENTS__DEFAULTS__MODEL=gpt-4o
                                     (nanobot's NANOBOT_<KEY>__<KEY> are read too; TROUPE_ wins)
  TROUPE_LOG_LEVEL                   log level: trace, debug, info (default), warn, error
  TROUPE_DEBUG=1                     print the stack trace of an unexpected error
  \${VAR} in config.json              is read from the environment (troupe daemon install-service keeps them)`,
  );

/**
 * `troupe [-c file] [-w dir] agent …` without help asked for defines the agent command alone: the
 * others (some 30, with their options) are only listed by help, offered for a mistyped command and
 * read by completion, none of which such a line reaches (~2 ms of a cold `agent -m`, measured).
 * Anything else before the command word (another option, a mistake) gets every command, as before.
 */
function agentAlone(args: string[]): boolean {
  if (args.includes("-h") || args.includes("--help")) return false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "-c" || a === "--config" || a === "-w" || a === "--workspace") i++;
    else if (!a.startsWith("--config=") && !a.startsWith("--workspace=")) return a === "agent";
  }
  return false;
}
const everyCommand = !agentAlone(process.argv.slice(2));

if (everyCommand) defineCommandsBefore(program);

program
  .command("agent")
  .description("talk to the agent: one message with -m (or piped in), else an interactive prompt")
  .option("-m, --message <text>", "send one message (- reads it from stdin), print the reply and exit: 0 answered, 1 failed, 130 Ctrl-C")
  .option("-s, --session <key>", "session key (channel:chatId)", "cli:direct")
  .option("--no-markdown", "print replies as plain text on a terminal too")
  .option("--logs", "show the runtime's log lines on stderr (through the daemon: see troupe daemon logs -f)")
  .option("--no-logs", "do not show them (the default)")
  .action(async (opts: { message?: string; session: string; markdown: boolean; logs?: boolean }) => {
    const session = await parseSessionKey(opts.session);
    const { runAgent } = await import("./agent.js");
    const code = await runAgent(loadForCli, { ...opts, session });
    // Everything is written and closed; only idle keep-alive sockets to the model would hold the
    // process open (~0.2 s), so it exits once its output is out.
    await new Promise((resolve) => process.stdout.write("", resolve));
    process.exit(code);
  });

if (everyCommand) defineCommandsAfter(program);

/** A data dir troupe may not write to (permissions, a read-only disk) is said in one line, whichever file it was. */
function unwritableDataDir(err: unknown): string | undefined {
  const { code, path } = err as NodeJS.ErrnoException;
  const { dataDir } = dataPaths();
  if (!path || (path !== dataDir && !path.startsWith(`${dataDir}/`))) return undefined;
  const why = code === "EACCES" || code === "EPERM" ? "permission denied" : code === "EROFS" ? "read-only file system" : undefined;
  return why && `troupe: cannot write to the data dir ${dataDir} (${why}); make it writable, or point TROUPE_HOME at another directory`;
}

/**
 * The command's run: bin/troupe.js waits for it (the bundle is CommonJS, so no top-level await). A run
 * that never settles leaves the exit code bin/troupe.js set (13), as an ES module entry's would.
 */
export const done = run();

async function run(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    if (err instanceof TroupeError) {
      console.error(err.message);
      process.exit(err.exitCode);
    }
    const unwritable = unwritableDataDir(err);
    if (unwritable) {
      console.error(unwritable);
      process.exit(1);
    }
    // Anything else is a bug or an environment failure: one line, the stack only when asked for.
    console.error(`troupe: unexpected error: ${(err as Error).message ?? String(err)} (set TROUPE_DEBUG=1 for the stack trace)`);
    if (process.env.TROUPE_DEBUG) console.error(err);
    process.exit(1);
  }
}
