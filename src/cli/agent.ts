import { once } from "node:events";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { LoadedConfig } from "../config/index.js";
import { TroupeError } from "../errors.js";
import { TURN_FINAL_STATES } from "../../machines/turn-states.js";
import { isStop, succeeded, type Backend } from "./agent-backend.js";
import { connectDaemon, type DaemonClient } from "./client.js";
import { createPrinter, type Printer, type PrinterOptions } from "./printer.js";
import { createProgress } from "./progress.js";

/** Talks to the daemon over its control API: progress streams on a TTY, message-tool sends print as they come. */
function remoteBackend(client: DaemonClient, opts: AgentOptions): Backend {
  let busy = false;
  /** Messages this client sent: their replies come back on their own stream. */
  const sent = new Set<string>();
  const following = new AbortController();
  return {
    follow(print) {
      void client
        .follow(
          opts.session,
          (reply) => {
            // A reply to our own message, or (while we ask) a message-tool send, is on the ask's stream already.
            if (reply.answers.some((id) => sent.has(id)) || (busy && reply.answers.length === 0)) return;
            print(reply.content);
          },
          following.signal,
        )
        .catch(() => undefined);
    },
    async ask(content, out) {
      busy = true;
      let state: string | undefined;
      const progress = createProgress(out);
      try {
        const reply = await client.send(opts.session, content, (event, data) => {
          if (event === "accepted") sent.add(String(data.id));
          else if (event === "progress") {
            progress.text();
            out.delta(String(data.delta));
          } else if (event === "turn_state") {
            state = String(data.state);
            out.boundary();
            progress.state(state);
          } else if (event === "tool_hint") progress.tool(String(data.tool), String(data.hint));
          else if (event === "model_retry") progress.retry(typeof data.status === "number" ? data.status : null, Number(data.delayMs));
          else if (event === "message") out.message(String(data.content));
        });
        return { content: reply, state: state && TURN_FINAL_STATES.includes(state as never) ? state : undefined };
      } finally {
        progress.stop();
        busy = false;
      }
    },
    cancel() {
      if (!busy) return false;
      void client.send(opts.session, "/stop").catch(() => undefined);
      return true;
    },
    close: async () => following.abort(),
  };
}

export interface AgentOptions {
  /** One message (`-` reads it from stdin); else an interactive prompt, or stdin when it is not a terminal. */
  message?: string;
  session: string;
  /** Render replies as Markdown on a terminal (--no-markdown turns it off). */
  markdown?: boolean;
}

/** How long a cancelled turn gets to end (its final checkpoint written, the daemon's /stop answered) before the CLI exits anyway. */
const CANCEL_GRACE_MS = 10_000;

/** `troupe agent`: one message with -m (or from stdin), else an interactive prompt. Uses the running daemon if there is one. */
export async function runAgent(loaded: LoadedConfig, opts: AgentOptions): Promise<number> {
  const tty = Boolean(process.stdout.isTTY);
  const printerOptions = { stream: tty, markdown: tty && opts.markdown !== false };
  // Not a terminal: the whole input is one message (a file, a heredoc, a pipe), as `-m -` says.
  const oneMessage = opts.message !== undefined || !process.stdin.isTTY;
  const content = opts.message === "-" || (oneMessage && opts.message === undefined) ? await readStdin() : opts.message;
  if (oneMessage && !content?.trim()) throw new TroupeError("no message: stdin was empty; give one with -m TEXT (or -m - to read it from stdin), or run troupe agent on a terminal to chat");
  const client = await connectDaemon(loaded.paths);
  // Through a running daemon this process needs only its client; the runtime loads for in-process turns.
  const backend = client ? remoteBackend(client, opts) : await (await import("./agent-local.js")).localBackend(loaded, opts);
  try {
    if (oneMessage) return await askOnce(backend, content!, createPrinter(process.stdout, printerOptions));
    await interactive(backend, opts, client ? `daemon pid ${client.pid}` : "in-process", printerOptions, join(loaded.paths.dataDir, "history", "cli_history"));
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
 * One message, one reply. The exit code says how the turn ended: 0 answered, 1 failed (its reason on
 * stderr), 130 stopped by Ctrl-C, which cancels the turn (in-process: it ends `cancelled`, nothing
 * resumes it; through the daemon: a /stop is sent) before the process exits. A second Ctrl-C exits at once.
 */
async function askOnce(backend: Backend, content: string, printer: Printer): Promise<number> {
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
    printer.finish(answer.content, succeeded(answer) ? process.stdout : process.stderr);
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

async function interactive(backend: Backend, opts: AgentOptions, where: string, printerOptions: PrinterOptions, historyFile: string): Promise<void> {
  const HISTORY_SIZE = 1000;
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true, history: await loadHistory(historyFile, HISTORY_SIZE), historySize: HISTORY_SIZE, removeHistoryDuplicates: true });
  await mkdir(dirname(historyFile), { recursive: true });
  // Appended line by line, as nanobot's cli history: another chat's lines are kept, not overwritten.
  let saving = Promise.resolve();
  const remember = (line: string) => (saving = saving.then(() => appendFile(historyFile, `${line}\n`, { mode: 0o600 })).catch(() => undefined));
  const queue: string[] = [];
  let working: Promise<void> | undefined;

  const handle = async (content: string) => {
    const printer = createPrinter(process.stdout, printerOptions);
    try {
      const answer = await backend.ask(content, printer);
      printer.finish(answer.content);
    } catch (err) {
      printer.reset();
      process.stderr.write(`error: ${(err as Error).message}\n`);
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
  // A report that arrives while the prompt waits is printed above it, and the prompt drawn again.
  backend.follow?.((text) => {
    const printer = createPrinter(process.stdout, printerOptions);
    if (!working) process.stdout.write("\r\x1b[K");
    printer.message(text);
    if (!working) rl.prompt(true);
  });
  console.log(`troupe agent — session ${opts.session} (${where}). /help for commands, Ctrl-C cancels a turn, Ctrl-D exits.`);
  rl.setPrompt("you> ");
  rl.prompt();
  await once(rl, "close");
  await working;
  await saving;
}
