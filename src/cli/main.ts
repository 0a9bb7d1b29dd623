import { Argument, Command } from "commander";
import { TroupeError } from "../errors.js";
import { dataPaths } from "../paths.js";
import { parseSessionKey } from "../session-key.js";
import { VERSION } from "../version.js";
import { runAgent } from "./agent.js";
import { daemonStatus, startDaemon, stopDaemon } from "./daemon.js";
import { runGateway } from "./gateway.js";
import { showLogs } from "./logs.js";
import { installService, uninstallService } from "./service.js";
import { deleteSessionCommand, listSessionsCommand, showSessionCommand } from "./sessions.js";
import { loadForCli } from "./load.js";
import { onboard } from "./onboard.js";
import { statusLines } from "./status.js";

// `troupe … | head`: a reader that stops early is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

const program = new Command()
  .name("troupe")
  .description("A personal AI agent runtime, run as a supervised actor system")
  .version(VERSION, "-v, --version")
  .showHelpAfterError()
  .addHelpText(
    "after",
    () => `
Examples:
  troupe onboard                     write config.json and the workspace (on a terminal: asks for provider, key, model)
  troupe agent -m "What is in my workspace?"
  troupe agent                       chat; /new, /stop, /status, /help; Ctrl-C cancels a turn, Ctrl-D exits
  troupe daemon start                run in the background, then: troupe daemon status, troupe daemon logs -f
  troupe sessions show cli:direct --all
  troupe doctor                      check config, provider, port, Telegram, store and disk
  source <(troupe completion bash)   tab completion (zsh: troupe completion zsh)

Data dir: ${dataPaths(process.env).dataDir} (config.json, store/, logs/, workspace/)

Environment:
  TROUPE_HOME                        the data dir (default ~/.troupe)
  TROUPE_<KEY>__<KEY>=value          overrides a config key, __ between levels, e.g.
                                     TROUPE_PROVIDERS__OPENAI__API_KEY=sk-...  TROUPE_AGENTS__DEFAULTS__MODEL=gpt-4o
  TROUPE_LOG_LEVEL                   log level: trace, debug, info (default), warn, error
  TROUPE_DEBUG=1                     print the stack trace of an unexpected error
  \${VAR} in config.json              is read from the environment (troupe daemon install-service keeps them)`,
  );

program
  .command("onboard")
  .description("write config.json (on a terminal: asks for provider, key and model) and fill the workspace from templates (never overwrites)")
  .action(async () => {
    const r = await onboard(await loadForCli(), { interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY) });
    console.log(`${r.config} ${r.configFile}${r.config === "kept" ? "" : " (mode 600)"}`);
    console.log(`workspace ${r.workspace}: ${r.created.length} file(s) created, ${r.kept.length} kept`);
    for (const f of r.created) console.log(`  + ${f}`);
    for (const w of r.warnings) console.error(w);
    if (r.config === "wrote" || r.config === "updated") console.log('next: troupe agent -m "Hello!" (troupe doctor checks that the provider answers)');
    if (!r.providerReady) {
      console.log(`next: give a provider key: export TROUPE_PROVIDERS__OPENAI__API_KEY=sk-... or set providers.openai.apiKey in ${r.configFile} (or run troupe onboard on a terminal to be asked)`);
    }
  });

program
  .command("status")
  .description("show config, workspace, model, providers, store, whether the daemon runs and which channels are enabled")
  .action(async () => {
    for (const line of await statusLines(await loadForCli())) console.log(line);
  });

program
  .command("agent")
  .description("talk to the agent: one message with -m (or piped in), else an interactive prompt")
  .option("-m, --message <text>", "send one message (- reads it from stdin), print the reply and exit: 0 answered, 1 failed, 130 Ctrl-C")
  .option("-s, --session <key>", "session key (channel:chatId)", "cli:direct")
  .option("--no-markdown", "print replies as plain text on a terminal too")
  .action(async (opts: { message?: string; session: string; markdown: boolean }) => {
    const session = parseSessionKey(opts.session);
    process.exitCode = await runAgent(await loadForCli(), { ...opts, session });
  });

program
  .command("gateway")
  .description("run the daemon in the foreground: channels, sessions and the control API (Ctrl-C stops it)")
  .option("--detached", "log to the log file only (how `troupe daemon start` runs it)")
  .action(async (opts: { detached?: boolean }) => {
    process.exitCode = await runGateway(await loadForCli(), { consoleLogs: !opts.detached });
  });

const daemon = program.command("daemon").description("run troupe in the background and manage it");
daemon
  .command("start")
  .description("start the gateway detached; returns once it answers")
  .action(async () => {
    process.exitCode = await startDaemon((await loadForCli()).paths);
  });
daemon
  .command("stop")
  .description("stop the gateway gracefully (SIGTERM)")
  .action(async () => {
    process.exitCode = await stopDaemon(dataPaths());
  });
daemon
  .command("restart")
  .description("stop, then start (a config that would not start is refused before the running daemon is stopped)")
  .action(async () => {
    const { paths } = await loadForCli();
    await stopDaemon(paths);
    process.exitCode = await startDaemon(paths);
  });
daemon
  .command("status")
  .description("is it running; the live actor tree with current states (exit 1 when a part failed, 3 when not running)")
  .action(async () => {
    process.exitCode = await daemonStatus(dataPaths());
  });
daemon
  .command("logs")
  .description("print the log (pretty)")
  .option("-f, --follow", "keep printing new lines")
  .option("-n, --lines <n>", "how many lines to show", "50")
  .action(async (opts: { follow?: boolean; lines: string }) => {
    const lines = Number.parseInt(opts.lines, 10);
    if (!Number.isInteger(lines) || lines < 0) throw new TroupeError(`--lines must be a whole number, not ${opts.lines}`);
    process.exitCode = await showLogs(dataPaths(), { follow: Boolean(opts.follow), lines });
  });
// The service commands need the data dir and the names of config.json's ${VAR}s, not a config that loads in this shell.
daemon
  .command("install-service")
  .description("install a systemd user unit for this data dir (Restart=always) with an EnvironmentFile for config.json's ${VAR}s, and start it")
  .option("--dry-run", "print the unit instead of installing it")
  .action(async (opts: { dryRun?: boolean }) => {
    process.exitCode = await installService(dataPaths(process.env), { dryRun: Boolean(opts.dryRun) });
  });
daemon
  .command("uninstall-service")
  .description("stop and remove this data dir's systemd user unit")
  .option("--dry-run", "say what would be done")
  .action(async (opts: { dryRun?: boolean }) => {
    process.exitCode = await uninstallService(dataPaths(process.env), { dryRun: Boolean(opts.dryRun) });
  });

const sessions = program.command("sessions").description("conversations, their transcripts and turn history (with or without a running daemon)");
sessions
  .command("list")
  .description("every session: turns, tokens, last activity, interrupted or resumed turns")
  .action(async () => {
    process.exitCode = await listSessionsCommand(dataPaths());
  });
sessions
  .command("show <key>")
  .description("a session's transcript and turn history")
  .option("-a, --all", "also the messages before each /new (older epochs)")
  .action(async (key: string, opts: { all?: boolean }) => {
    process.exitCode = await showSessionCommand(dataPaths(), parseSessionKey(key), { all: Boolean(opts.all) });
  });
sessions
  .command("delete <key>")
  .description("delete a session: its messages (every epoch), turns, unanswered messages and subagents (refused while a turn of it runs)")
  .action(async (key: string) => {
    process.exitCode = await deleteSessionCommand(dataPaths(process.env), parseSessionKey(key));
  });

program
  .command("memory")
  .description("memory: show the memory files' sizes, history entries, cursors and the next Dream run")
  .addArgument(new Argument("<action>").choices(["show"]))
  .action(async () => {
    const { memoryShowCommand } = await import("./memory.js");
    process.exitCode = await memoryShowCommand(await loadForCli());
  });
const dream = program.command("dream").description("Dream: digest history.jsonl into SOUL.md, USER.md and memory/MEMORY.md, with a git history");
dream
  .command("run")
  .description("run Dream now (through the daemon when it runs) and print what it changed")
  .action(async () => {
    const { dreamRunCommand } = await import("./memory.js");
    process.exitCode = await dreamRunCommand(await loadForCli());
  });
dream
  .command("log [sha]")
  .description("recent memory commits, or one with its diff")
  .action(async (sha?: string) => {
    const { dreamHistoryCommand } = await import("./memory.js");
    process.exitCode = await dreamHistoryCommand(await loadForCli(), "log", sha);
  });
dream
  .command("restore <sha>")
  .description("put SOUL.md, USER.md and memory/MEMORY.md back as they were at a commit (itself a new commit)")
  .action(async (sha: string) => {
    const { dreamHistoryCommand } = await import("./memory.js");
    process.exitCode = await dreamHistoryCommand(await loadForCli(), "restore", sha);
  });

program
  .command("doctor")
  .description("check config, provider (one tiny request), gateway port, Telegram, store and disk; exit 1 if anything failed")
  .action(async () => {
    const { doctor } = await import("./doctor.js");
    process.exitCode = await doctor(process.env);
  });

program
  .command("completion")
  .description("print a shell completion script: source <(troupe completion bash)")
  .addArgument(new Argument("<shell>", "the shell").choices(["bash", "zsh"]))
  .action(async (shell: string) => {
    const { completionScript } = await import("./completion.js");
    process.stdout.write(completionScript(program, shell));
  });

/** A data dir troupe may not write to (permissions, a read-only disk) is said in one line, whichever file it was. */
function unwritableDataDir(err: unknown): string | undefined {
  const { code, path } = err as NodeJS.ErrnoException;
  const { dataDir } = dataPaths();
  if (!path || (path !== dataDir && !path.startsWith(`${dataDir}/`))) return undefined;
  const why = code === "EACCES" || code === "EPERM" ? "permission denied" : code === "EROFS" ? "read-only file system" : undefined;
  return why && `troupe: cannot write to the data dir ${dataDir} (${why}); make it writable, or point TROUPE_HOME at another directory`;
}

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
