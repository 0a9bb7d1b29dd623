import { once } from "node:events";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { LoadedConfig } from "../config/index.js";
import type * as Readline from "node:readline";
import { lazyRequire } from "../builtin.js";
import { TroupeError } from "../errors.js";
import { dataPaths, type DataPaths } from "../paths.js";
import { BackendReplaced, succeeded, type AgentIo, type Backend, type ChatOptions, type RemoteOptions, isStop } from "./agent-backend.js";
import { remoteBackend } from "./agent-remote.js";
import { connectStoreHolder, openOrReachHolder } from "./client.js";
import { renderMarkdown } from "./markdown.js";
import { createPrinter, type Printer, type PrinterOptions } from "./printer.js";
import { printable } from "./printable.js";

/** Only the interactive prompt uses it: `agent -m` does not load it. */
const readline = lazyRequire<typeof Readline>("node:readline");

/**
 * The in-process backend, which loads the whole runtime: imported only when this process opens the
 * store itself. The store's open is started first (after the checks a bad config fails on): LevelDB
 * opens on its own thread while the runtime's modules load (a cold `agent -m`'s store waits ~10 ms
 * for the disk, measured).
 */
async function localBackend(loaded: LoadedConfig, opts: ChatOptions, io: AgentIo, conn: RemoteOptions, warn: (text: string) => void): Promise<Backend> {
  // nanobot's `agent` fills what the workspace lacks from the templates first (sync_workspace_templates).
  const start = (await import("../runtime-start.js")).startAgentRuntime(loaded, { fillWorkspace: true });
  await start.underWay;
  const local = await import("./agent-local.js").catch(async (err: unknown) => {
    await start.abandon();
    throw err;
  });
  const backend = await local.localBackend(loaded, opts, io, conn, start);
  // Exec runs in this process now: whether it is sandboxed is said here, as the gateway says it.
  if (start.execNotice) warn(start.execNotice);
  return backend;
}

export interface AgentOptions {
  /** One message (`-` reads it from stdin); else an interactive prompt, or stdin when it is not a terminal. */
  message?: string;
  session: string;
  /** Render replies as Markdown on a terminal (--no-markdown turns it off). */
  markdown?: boolean;
  /** Show the runtime's log lines on stderr (--logs; nanobot's agent --logs/--no-logs). */
  logs?: boolean;
}

/** How long `agent -m` waits for a daemon that went away mid-message (a restart) before it gives up. */
const ONE_MESSAGE_WAIT_MS = 60_000;

/** How long a cancelled turn gets to end (its final checkpoint written, the daemon's /stop answered) before the CLI exits anyway. */
const CANCEL_GRACE_MS = 10_000;

/** `troupe agent`: one message with -m (or from stdin), else an interactive prompt. Uses the running daemon if there is one. */
export async function runAgent(load: () => Promise<LoadedConfig>, opts: AgentOptions, paths: DataPaths = dataPaths()): Promise<number> {
  const tty = Boolean(process.stdout.isTTY);
  const printerOptions = { stream: tty, markdown: tty && opts.markdown !== false };
  // Not a terminal: the whole input is one message (a file, a heredoc, a pipe), as `-m -` says.
  const oneMessage = opts.message !== undefined || !process.stdin.isTTY;
  const fromStdin = opts.message === "-" || (oneMessage && opts.message === undefined);
  const content = fromStdin ? await readStdin() : opts.message;
  if (oneMessage && !content?.trim()) {
    throw new TroupeError(
      fromStdin
        ? "no message: stdin was empty; give one with -m TEXT (or -m - to read it from stdin), or run troupe agent on a terminal to chat"
        : "no message: the -m text is empty; give the message after -m (or -m - to read it from stdin)",
    );
  }
  // Notes go to stderr until the prompt takes them over (printing above the line being typed).
  const io: AgentIo = { say: (text) => process.stderr.write(`${text}\n`), message: (text) => process.stdout.write(`${printable(text)}\n`) };
  const chat: ChatOptions = { session: opts.session, oneShot: oneMessage, logs: opts.logs };
  const conn: RemoteOptions = { follow: !oneMessage, waitMs: oneMessage ? ONE_MESSAGE_WAIT_MS : Number.POSITIVE_INFINITY };
  // The daemon, or an in-process `troupe agent` lending its store; else this process opens it.
  // A running daemon answers without this process loading the config (or the runtime): it has its own.
  let client = await connectStoreHolder(paths);
  let loaded: LoadedConfig | undefined;
  const config = async () => (loaded ??= await load());
  // As the gateway does: once, though the chat may move in-process again (its lender exited).
  let warned = false;
  const warn = (text: string) => {
    if (warned) return;
    warned = true;
    io.say(`warning: ${text}`);
  };
  let current: Backend;
  if (client) current = remoteBackend(paths, client, chat, io, conn);
  else {
    const cfg = await config();
    // Another process may have taken the store just now: it serves the control API in a moment, or lets go.
    const got = await openOrReachHolder(paths, () => localBackend(cfg, chat, io, conn, warn));
    if ("opened" in got) current = got.opened;
    else {
      client = got.holder;
      current = remoteBackend(paths, client, chat, io, conn);
    }
  }
  conn.takeOver = async (lenderPid) => {
    const local = await config()
      .then((c) => localBackend(c, chat, io, conn, warn))
      .catch(() => undefined);
    if (!local) return false;
    const old = current;
    current = local;
    void old.close();
    io.say(`(troupe agent pid ${lenderPid}, which lent the store, has exited; this chat goes on in-process)`);
    return true;
  };
  /** The chat's backend, which may move: in-process to the daemon (handoff), through a troupe agent to in-process (it exited). */
  const backend: Backend = {
    async ask(text, out) {
      for (;;) {
        const b = current;
        try {
          return await b.ask(text, out);
        } catch (err) {
          if (!(err instanceof BackendReplaced) || current === b) throw err;
        }
      }
    },
    cancel: () => current.cancel(),
    close: () => current.close(),
  };
  // The runtime's log lines are the holder's: they are in the data dir's log, not this process's stderr.
  if (chat.logs && client) io.say(`(--logs: ${client.holder === "agent" ? `troupe agent pid ${client.pid}` : "the daemon"} answers this chat; its log lines are in troupe daemon logs -f)`);
  const where = !client ? "in-process" : client.holder === "agent" ? `through troupe agent pid ${client.pid}, which holds the store` : `daemon pid ${client.pid}`;
  try {
    if (oneMessage) return await askOnce(backend, content!, createPrinter(process.stdout, printerOptions), paths.configFile);
    await interactive(backend, opts, where, printerOptions, join(paths.dataDir, "history", "cli_history"), io);
    return 0;
  } finally {
    await backend.close();
  }
}

/** Reads stdin to its end. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

/**
 * One message, one reply. The exit code says how the turn ended: 0 answered (also at the tool-iteration
 * limit: the summary is the reply, a note on stderr says where it stopped), 1 failed (its reason on stderr), 130 stopped by Ctrl-C, which cancels the turn (in-process: it ends `cancelled`, nothing
 * resumes it; through the daemon: a /stop is sent) before the process exits. A second Ctrl-C exits at once.
 */
async function askOnce(backend: Backend, content: string, printer: Printer, configFile: string): Promise<number> {
  let interrupted: (() => void) | undefined;
  const grace = new Promise<undefined>((resolve) => (interrupted = () => setTimeout(() => resolve(undefined), CANCEL_GRACE_MS).unref()));
  let cancelled = false;
  const onSigint = () => {
    if (cancelled) process.exit(130);
    cancelled = true;
    process.stderr.write("\n(cancelling…)\n");
    backend.cancel();
    interrupted?.();
  };
  process.on("SIGINT", onSigint);
  try {
    const answer = await Promise.race([backend.ask(content, printer), grace]);
    if (cancelled || !answer) {
      printer.reset();
      return 130;
    }
    // The message tool already wrote to this chat: the reply is not shown a second time (as nanobot).
    if (answer.alreadySent) printer.reset();
    else printer.finish(answer.content, succeeded(answer) ? process.stdout : process.stderr);
    if (answer.state === "max_iterations") process.stderr.write(`note: the turn stopped at the tool-iteration limit; raise agents.defaults.maxToolIterations in ${configFile} to let it go further\n`);
    return succeeded(answer) ? 0 : 1;
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** The last lines typed at the prompt, newest first (as readline wants them). */
async function loadHistory(file: string, max: number): Promise<string[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return [...new Set(text.split("\n").filter(Boolean).reverse())].slice(0, max);
}

async function interactive(backend: Backend, opts: AgentOptions, where: string, printerOptions: PrinterOptions, historyFile: string, io: AgentIo): Promise<void> {
  const HISTORY_SIZE = 1000;
  const { clearLine, createInterface, cursorTo } = readline();
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true, history: await loadHistory(historyFile, HISTORY_SIZE), historySize: HISTORY_SIZE, removeHistoryDuplicates: true });
  await mkdir(dirname(historyFile), { recursive: true });
  // Appended line by line, as nanobot's cli history: another chat's lines are kept, not overwritten.
  let saving = Promise.resolve();
  const remember = (line: string) => (saving = saving.then(() => appendFile(historyFile, `${line}\n`, { mode: 0o600 })).catch(() => undefined));
  const queue: string[] = [];
  let working: Promise<void> | undefined;
  /** The reply being printed, if any: what arrives meanwhile goes through it, on lines of its own. */
  let current: Printer | undefined;
  /** Printed above the line being typed, which is drawn again below it. */
  const above = (text: string) => {
    if (current) return current.message(text);
    clearLine(process.stdout, 0);
    cursorTo(process.stdout, 0);
    process.stdout.write(`${text}\n`);
    rl.prompt(true);
  };
  io.say = above;
  io.message = (text) => (current ? current.message(text) : above(printerOptions.markdown ? renderMarkdown(printable(text), process.stdout.columns) : printable(text)));

  const handle = async (content: string) => {
    const printer = createPrinter(process.stdout, printerOptions);
    current = printer;
    try {
      const answer = await backend.ask(content, printer);
      if (answer.alreadySent) printer.reset();
      else printer.finish(answer.content);
    } catch (err) {
      printer.reset();
      process.stderr.write(`error: ${(err as Error).message}\n`);
    } finally {
      current = undefined;
    }
  };
  const drain = () =>
    (working ??= (async () => {
      while (queue.length) await handle(queue.shift()!);
      working = undefined;
      rl.prompt();
    })());

  rl.on("SIGINT", () => {
    if (backend.cancel()) process.stdout.write("\n(cancelling…)\n");
    else {
      process.stdout.write("\n(Ctrl-D to exit)\n");
      rl.prompt();
    }
  });
  rl.on("line", (line) => {
    const content = line.trim();
    if (!content) return void (working ?? rl.prompt());
    remember(content);
    // /stop while a turn runs cancels it now; queued behind it, it would find nothing to stop.
    if (isStop(content) && working && backend.cancel()) return void process.stdout.write("(cancelling…)\n");
    queue.push(content);
    void drain();
  });
  console.log(`troupe agent — session ${opts.session} (${where}). /help for commands, Ctrl-C cancels a turn, Ctrl-D exits.`);
  rl.setPrompt("you> ");
  rl.prompt();
  await once(rl, "close");
  await working;
  await saving;
}
