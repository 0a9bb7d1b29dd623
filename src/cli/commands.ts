import { Argument, Option, type Command } from "commander";
import { TroupeError } from "../errors.js";
import { dataPaths } from "../paths.js";

// Every command but \`agent\` (src/cli/main.ts defines it and decides which of these to define): each
// imports what it uses when it runs.
export const loadForCli = async () => (await import("./load.js")).loadForCli();
export const parseSessionKey = async (key: string) => (await import("../session-key.js")).parseSessionKey(key);

/** The commands listed before \`agent\` in the help. */
export function defineCommandsBefore(program: Command): void {
  program
    .command("onboard")
    .description("write config.json (on a terminal: asks for provider, key and model) and fill the workspace from templates (never overwrites)")
    .action(async () => {
      const { onboard } = await import("./onboard.js");
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
      const { statusLines } = await import("./status.js");
      const loaded = await loadForCli();
      const { printable } = await import("./printable.js");
      for (const line of await statusLines(loaded)) console.log(printable(line));
      // An enabled channel that will not run is a problem a script checking status must see.
      if ((loaded.unrunnableChannels ?? []).length > 0) process.exitCode = 1;
    });
}

/** The commands listed after \`agent\` in the help. */
export function defineCommandsAfter(program: Command): void {
  program
    .command("gateway")
    .description("run the daemon in the foreground: channels, sessions and the control API (Ctrl-C stops it)")
    .option("-p, --port <port>", "listen on this port instead of gateway.port, for this run (as TROUPE_GATEWAY__PORT does)")
    .option("--detached", "log to the log file only (how `troupe daemon start` runs it)")
    .action(async (opts: { detached?: boolean; port?: string }) => {
      const port = opts.port === undefined ? undefined : Number(opts.port);
      if (port !== undefined && !(/^\d+$/.test(opts.port!) && port <= 65535)) throw new TroupeError(`--port must be a port number from 0 to 65535, not ${opts.port}`);
      const { runGateway } = await import("./gateway.js");
      process.exitCode = await runGateway(await loadForCli(), { consoleLogs: !opts.detached, port });
    });

  const daemon = program.command("daemon").description("run troupe in the background and manage it");
  daemon
    .command("start")
    .description("start the gateway detached; returns once it answers")
    .action(async () => {
      const { startDaemon } = await import("./daemon.js");
      process.exitCode = await startDaemon((await loadForCli()).paths);
    });
  daemon
    .command("stop")
    .description("stop the gateway gracefully (SIGTERM)")
    .action(async () => {
      const { stopDaemon } = await import("./daemon.js");
      process.exitCode = await stopDaemon(dataPaths());
    });
  daemon
    .command("restart")
    .description("stop, then start (a config that would not start is refused before the running daemon is stopped)")
    .action(async () => {
      const { paths } = await loadForCli();
      const { startDaemon, stopDaemon } = await import("./daemon.js");
      await stopDaemon(paths);
      process.exitCode = await startDaemon(paths);
    });
  daemon
    .command("status")
    .description("is it running; the live actor tree with current states (exit 1 when a part failed, 3 when not running)")
    .action(async () => {
      const { daemonStatus } = await import("./daemon.js");
      process.exitCode = await daemonStatus(dataPaths());
    });
  daemon
    .command("logs")
    .description("print the log, one line per entry: messages received, turns, tool calls, subagents, deliveries, restarts, recovery")
    .option("-f, --follow", "keep printing new lines")
    .option("-n, --lines <n>", "how many lines to show", "50")
    .option("-s, --session <key>", "only the lines about one session (channel:chatId)")
    .action(async (opts: { follow?: boolean; lines: string; session?: string }) => {
      const lines = Number.parseInt(opts.lines, 10);
      if (!Number.isInteger(lines) || lines < 0) throw new TroupeError(`--lines must be a whole number, not ${opts.lines}`);
      const { showLogs } = await import("./logs.js");
      const session = opts.session === undefined ? undefined : await parseSessionKey(opts.session);
      process.exitCode = await showLogs(dataPaths(), { follow: Boolean(opts.follow), lines, session });
    });
  // The service commands need the data dir and the names of config.json's ${VAR}s, not a config that loads in this shell.
  daemon
    .command("install-service")
    .description("install a systemd user unit for this data dir (Restart=always) with an EnvironmentFile for config.json's ${VAR}s, and start it")
    .option("--dry-run", "print the unit instead of installing it")
    .action(async (opts: { dryRun?: boolean }) => {
      const { installService } = await import("./service.js");
      process.exitCode = await installService(dataPaths(process.env), { dryRun: Boolean(opts.dryRun) });
    });
  daemon
    .command("uninstall-service")
    .description("stop and remove this data dir's systemd user unit")
    .option("--dry-run", "say what would be done")
    .action(async (opts: { dryRun?: boolean }) => {
      const { uninstallService } = await import("./service.js");
      process.exitCode = await uninstallService(dataPaths(process.env), { dryRun: Boolean(opts.dryRun) });
    });

  const sessions = program.command("sessions").description("conversations, their transcripts and turn history (with or without a running daemon)");
  sessions
    .command("list")
    .description("every session: turns, tokens, last activity, interrupted or resumed turns")
    .action(async () => {
      const { listSessionsCommand } = await import("./sessions.js");
      process.exitCode = await listSessionsCommand(dataPaths());
    });
  sessions
    .command("show <key>")
    .description("a session's transcript and turn history")
    .option("-a, --all", "also the messages before each /new (older epochs)")
    .action(async (key: string, opts: { all?: boolean }) => {
      const { showSessionCommand } = await import("./sessions.js");
      process.exitCode = await showSessionCommand(dataPaths(), await parseSessionKey(key), { all: Boolean(opts.all) });
    });
  sessions
    .command("delete <key>")
    .description("delete a session: its messages (every epoch), turns, unanswered messages and subagents (refused while a turn of it runs)")
    .action(async (key: string) => {
      const { deleteSessionCommand } = await import("./sessions.js");
      process.exitCode = await deleteSessionCommand(dataPaths(process.env), await parseSessionKey(key));
    });

  const cron = program.command("cron").description("scheduled jobs: reminders and recurring tasks (with or without a running daemon)");
  cron
    .command("list")
    .description("every job: schedule, state, next and last run (the heartbeat is a protected system job)")
    .action(async () => {
      const { cronListCommand } = await import("./cron.js");
      process.exitCode = await cronListCommand(dataPaths());
    });
  cron
    .command("add")
    .description("add a job: --every SECONDS, --cron EXPR [--tz TZ] or --at ISO (runs once, then is deleted)")
    .requiredOption("--name <name>", "a short label")
    .requiredOption("--message <text>", "what the agent does (or reminds of) at each run")
    .option("--every <seconds>", "run every this many seconds (1 to 315360000, 10 years)")
    .option("--cron <expr>", "a 5-field cron expression, e.g. \"0 9 * * 1-5\"")
    .option("--tz <tz>", "IANA timezone for --cron or a naive --at (default agents.defaults.timezone)")
    .option("--at <iso>", "one run at this time, e.g. 2026-03-25T08:00:00")
    .option("--channel <channel>", "deliver each run's reply on this channel (with --to)")
    .option("--to <chat>", "the chat id to deliver to (with --channel)")
    .addOption(new Option("--catch-up <policy>", "runs missed while troupe was down: once, skip, or all (at most 10)").choices(["once", "skip", "all"]))
    .action(async (opts: { name: string; message: string; every?: string; cron?: string; tz?: string; at?: string; channel?: string; to?: string; catchUp?: string }) => {
      const every = opts.every === undefined ? undefined : Number(opts.every);
      if (every !== undefined && !Number.isFinite(every)) throw new TroupeError(`troupe cron add: every_seconds: --every must be a number of seconds, not ${opts.every}`);
      const { cronAddCommand } = await import("./cron.js");
      const { every: _every, ...rest } = opts;
      process.exitCode = await cronAddCommand(dataPaths(), { ...rest, ...(every === undefined ? {} : { every }) });
    });
  cron
    .command("remove <id>")
    .description("remove a job and its run history (system jobs cannot be removed)")
    .action(async (id: string) => {
      const { cronRemoveCommand } = await import("./cron.js");
      process.exitCode = await cronRemoveCommand(dataPaths(), id);
    });
  for (const [name, enabled] of [["enable", true], ["disable", false]] as const) {
    cron
      .command(`${name} <id>`)
      .description(enabled ? "enable a job (its next run counted from now)" : "pause a job (kept, not run)")
      .action(async (id: string) => {
        const { cronEnableCommand } = await import("./cron.js");
        process.exitCode = await cronEnableCommand(dataPaths(), id, enabled);
      });
  }
  cron
    .command("run <id>")
    .description("run a job now (without a daemon: recorded, and run when the gateway starts)")
    .action(async (id: string) => {
      const { cronRunCommand } = await import("./cron.js");
      process.exitCode = await cronRunCommand(dataPaths(), id);
    });
  cron
    .command("runs <id>")
    .description("a job's last runs: scheduled time, status, missed instants, reply excerpt")
    .action(async (id: string) => {
      const { cronRunsCommand } = await import("./cron.js");
      process.exitCode = await cronRunsCommand(dataPaths(), id);
    });

  const mcp = program.command("mcp").description("MCP servers (tools.mcpServers)");
  mcp
    .command("list")
    .description("each MCP server: transport, state, tools, resources, prompts, last error (live from the daemon, else by connecting once); exit 1 when one failed")
    .action(async () => {
      const { listMcpCommand } = await import("./mcp.js");
      process.exitCode = await listMcpCommand(await loadForCli());
    });

  program
    .command("inspect")
    // The names as machines/index.ts lists them (test/e2e/inspect.test.ts holds them to it): help does not load the machines.
    .argument("[machine]", "one machine to draw, all when none is named: supervisor, session, turn, telegram, cron, mcp, dream")
    .description("draw troupe's state machines (no daemon needed): text, Mermaid or JSON, or an HTML page; --live shows the running daemon's actors")
    .option("-f, --format <format>", "text, mermaid or json", "text")
    .option("-o, --out <file.html>", "write a standalone HTML page that draws the machines")
    .option("--live", "the running daemon's actor tree with current states, refreshed (like top); Ctrl-C exits")
    .option("--interval <seconds>", "how often --live refreshes", "1")
    .action(async (machine: string | undefined, opts: { format: string; out?: string; live?: boolean; interval: string }) => {
      const { inspectCommand, inspectLive } = await import("./inspect.js");
      if (!opts.live) return void (process.exitCode = await inspectCommand({ machine, ...opts }));
      const seconds = Number(opts.interval);
      if (!(seconds >= 0.1)) throw new TroupeError(`--interval must be a number of seconds (0.1 or more), not ${opts.interval}`);
      process.exitCode = await inspectLive(dataPaths(process.env), { intervalMs: seconds * 1000 });
    });

  program
    .command("memory")
    .description("memory: show the memory files' sizes, history entries, cursors and the next Dream run")
    .addArgument(new Argument("<action>", "show: print the overview").choices(["show"]))
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
    .option("--repair", "repair a damaged store with LevelDB's repair, after copying it aside (stop the daemon first)")
    .action(async (opts: { repair?: boolean }) => {
      const { doctor, doctorRepair } = await import("./doctor.js");
      process.exitCode = opts.repair ? await doctorRepair(process.env) : await doctor(process.env);
    });

  program
    .command("completion")
    .description("print a shell completion script: source <(troupe completion bash)")
    .addArgument(new Argument("<shell>", "the shell").choices(["bash", "zsh"]))
    .action(async (shell: string) => {
      const { completionScript } = await import("./completion.js");
      process.stdout.write(completionScript(program, shell));
    });
}
