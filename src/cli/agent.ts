import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { clearLine, createInterface, cursorTo } from "node:readline";
import type { LoadedConfig } from "../config/index.js";
import { createAgentRuntime, type AgentRuntime } from "../runtime.js";
import { connectStoreHolder, DaemonGoneError, type DaemonClient } from "./client.js";
import { removeAgentRecord, writeAgentRecord } from "./agent-record.js";
import { startAgentServer, type AgentHost } from "../server/agent-api.js";
import type { ControlServer } from "../server/http.js";
import { ensureToken } from "../server/token.js";
import { StoreLockedError, TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { renderMarkdown } from "./markdown.js";
import { createPrinter, type Printer, type PrinterOptions } from "./printer.js";
import { when } from "./sessions.js";
import { inboxDeleteOps } from "../store/inbox.js";
import { outboxDeliveredOps, outboxPutOp, pendingOutbox } from "../store/outbox.js";
import type { Store, StoreOp } from "../store/store.js";
import { getTurn, listOpenTurns, type TurnRecord } from "../store/turns.js";
import { replyRecord } from "../../actors/session-turn.js";
import type { TurnHandle, TurnResult } from "../../actors/turn.js";
import { TURN_FINAL_STATES, type TurnInput } from "../../machines/turn.machine.js";

const sessionParts = (key: string) => {
  const i = key.indexOf(":");
  return i > 0 ? { channel: key.slice(0, i), chatId: key.slice(i + 1) } : { channel: "cli", chatId: key };
};

/** A session's turns that were interrupted (the process stopped mid-turn), oldest first. */
async function interruptedTurns(store: Store, sessionKey: string): Promise<TurnRecord[]> {
  const records = await Promise.all((await listOpenTurns(store, sessionKey)).map((t) => getTurn(store, t.turnId)));
  return records.filter((r): r is TurnRecord => r !== undefined && !r.final).sort((a, b) => a.createdAt - b.createdAt);
}

/**
 * A turn the daemon started for a channel message (a `troupe agent` through the daemon, then the
 * daemon died) ends as the daemon would end it: its reply queued for that channel, the messages it
 * answers out of the inbox, or the daemon would answer them again. A turn of this process has neither.
 */
const channelReplyOps = (input: TurnInput) => (result: TurnResult): StoreOp[] => {
  if (!input.messageId) return [];
  const answers = [input.messageId, ...result.output.takenIds];
  return [outboxPutOp(replyRecord(input, result.output.reply, `reply:${result.turnId}`, answers, Date.now())), ...inboxDeleteOps(input.sessionKey, answers)];
};

/**
 * The terminal as the "cli" channel: what the message tool sends to it is printed, then marked
 * delivered. Entries left from an earlier run that stopped before printing them come first.
 */
async function deliverToTerminal(runtime: AgentRuntime, print: (text: string) => void): Promise<() => Promise<void>> {
  let chain = Promise.resolve();
  const deliver = (m: { deliveryId: string; content: string; media: string[] }) => {
    chain = chain.then(async () => {
      print(`${m.content}${m.media.map((p) => `\n[file] ${p}`).join("")}`);
      await runtime.store.batch(outboxDeliveredOps(m.deliveryId, Date.now()), { sync: true });
    });
  };
  for (const m of await pendingOutbox(runtime.store, "cli")) deliver(m);
  const sub = runtime.bus.ofType("outbound").subscribe((e) => {
    if (e.channel === "cli") deliver(e);
  });
  return async () => {
    sub.unsubscribe();
    await chain;
  };
}

/** What a message got: the reply, and how its turn ended (none for a command's answer). */
interface Answer {
  content: string;
  state?: string;
}
const succeeded = (a: Answer) => a.state === undefined || a.state === "responded";

/** Where the conversation happens: in this process, or in the running daemon. */
interface Backend {
  /** Sends one message; streamed text and messages go to `printer`; resolves with the reply. */
  ask(content: string, printer: Printer): Promise<Answer>;
  /** Asks the running turn to stop (Ctrl-C, /stop); false when nothing runs. */
  cancel(): boolean;
  close(): Promise<void>;
}

const isStop = (content: string) => content.trim().split(/\s+/)[0]?.toLowerCase() === "/stop";
const NOTHING_RUNS = "Nothing is running.";

/** One running message of a session in this process: its turn (once begun) and whether it is to stop. */
interface Running {
  turn?: TurnHandle;
  cancelWanted: boolean;
}

/**
 * The conversation in this process. A `cli` turn is this process's: the daemon does not resume it
 * (it has no cli channel). So before the session takes anything new, a turn left interrupted there
 * (a process killed mid-turn) is finished from its checkpoint and its reply printed: a session's
 * turns run one at a time, or the newer turn's messages would land before the older one's.
 *
 * While it holds the store it lends it: it serves the control API on a loopback port (recorded in
 * <data dir>/agent.json, same token as the daemon's), through which `agent -m`, `sessions …` of
 * other processes work, their messages running here one at a time per session. A starting gateway
 * asks it to hand over (POST /api/handoff): what runs finishes, the store is closed, and this chat
 * goes on through the daemon.
 */
async function localBackend(loaded: LoadedConfig, opts: AgentOptions, io: AgentIo, conn: RemoteOptions): Promise<Backend> {
  const runtime = await createAgentRuntime(loaded);
  let printer: Printer | undefined;
  const stopDelivery = await deliverToTerminal(runtime, (text) => (printer ? printer.message(text) : io.message(text)));
  const mine = (e: { sessionKey: string }) => e.sessionKey === opts.session;
  const subs = [
    runtime.bus.ofType("progress").subscribe((e) => mine(e) && printer?.delta(e.delta)),
    runtime.bus.ofType("turn_state").subscribe((e) => mine(e) && printer?.boundary()),
  ];
  /** Each session's messages run one after another, this chat's and those sent through the API alike. */
  const chains = new Map<string, Promise<unknown>>();
  const queued = new Map<string, number>();
  const running = new Map<string, Running>();
  let asking = false;
  let askCancelled = false;
  let moving: Promise<Backend> | undefined;
  let moved: Backend | undefined;

  function inOrder<T>(sessionKey: string, work: () => Promise<T>): Promise<T> {
    queued.set(sessionKey, (queued.get(sessionKey) ?? 0) + 1);
    const next = (chains.get(sessionKey) ?? Promise.resolve()).catch(() => undefined).then(work);
    const done = next.then(
      () => undefined,
      () => undefined,
    );
    chains.set(sessionKey, done);
    void done.then(() => {
      const n = (queued.get(sessionKey) ?? 1) - 1;
      if (n > 0) queued.set(sessionKey, n);
      else {
        queued.delete(sessionKey);
        if (chains.get(sessionKey) === done) chains.delete(sessionKey);
      }
    });
    return next;
  }

  async function finishInterrupted(sessionKey: string, out: Printer | undefined, track: (t: TurnHandle) => TurnHandle, ctl: Running): Promise<void> {
    for (const record of await interruptedTurns(runtime.store, sessionKey)) {
      if (ctl.cancelWanted) return;
      process.stderr.write(`(finishing a turn interrupted at ${when(record.updatedAt)})\n`);
      const result = await track(runtime.conversation.resume(record, channelReplyOps(record.input as TurnInput))).done;
      out?.finish(result.output.reply);
      out?.reset();
    }
  }

  /** One message of a session, after what runs of it; `out` (this chat's) shows its progress. */
  function run(sessionKey: string, content: string, out?: Printer, cancelled = () => false): Promise<Answer> {
    if (isStop(content)) {
      // Nothing of this chat runs (its /stop while a turn runs cancels at once); one sent through the API may.
      const ctl = running.get(sessionKey);
      if (!ctl) return Promise.resolve({ content: NOTHING_RUNS });
      ctl.cancelWanted = true;
      ctl.turn?.cancel();
      return Promise.resolve({ content: "Stopped." });
    }
    return inOrder(sessionKey, async () => {
      const ctl: Running = { cancelWanted: cancelled() };
      const track = (turn: TurnHandle) => {
        ctl.turn = turn;
        if (ctl.cancelWanted) turn.cancel();
        return turn;
      };
      running.set(sessionKey, ctl);
      if (out) printer = out;
      try {
        await finishInterrupted(sessionKey, out, track, ctl);
        if (ctl.cancelWanted) return { content: "Stopped.", state: "cancelled" };
        const reply = await runtime.conversation.handle({ sessionKey, ...sessionParts(sessionKey), content }, track);
        return { content: reply.content, state: reply.state };
      } finally {
        running.delete(sessionKey);
        if (out) printer = undefined;
      }
    });
  }

  let server: ControlServer | undefined;
  const release = async () => {
    await server?.close();
    await removeAgentRecord(loaded.paths).catch(() => undefined);
    subs.forEach((sub) => sub.unsubscribe());
    await stopDelivery();
    await runtime.close();
  };
  const host: AgentHost = {
    store: runtime.store,
    bus: runtime.bus,
    logger: runtime.logger,
    dataDir: loaded.paths.dataDir,
    accepting: () => !moving,
    run: (sessionKey, content) => run(sessionKey, content),
    busy: (sessionKey) => queued.has(sessionKey),
    handOver: async () => {
      moving ??= (async () => {
        io.say("(troupe daemon is starting: this chat is handed over to it once what runs here has finished)");
        await Promise.all([...chains.values()]);
        subs.forEach((sub) => sub.unsubscribe());
        await stopDelivery();
        await runtime.close();
        await removeAgentRecord(loaded.paths).catch(() => undefined);
        moved = remoteBackend(loaded.paths, undefined, opts, io, conn);
        return moved;
      })();
      await moving;
    },
  };
  try {
    server = await startAgentServer(host, await ensureToken(loaded.paths.tokenFile));
    await writeAgentRecord(loaded.paths, server.url);
  } catch (err) {
    // The chat works without it; only the other commands cannot reach the store meanwhile.
    runtime.logger.warn({ err }, "could not serve the control API for other troupe commands");
  }

  return {
    async ask(content, out) {
      if (moving) return (await moving).ask(content, out);
      asking = true;
      try {
        return await run(opts.session, content, out, () => askCancelled);
      } finally {
        asking = false;
        askCancelled = false;
      }
    },
    cancel() {
      if (moved) return moved.cancel();
      if (!asking) return false;
      askCancelled = true;
      const ctl = running.get(opts.session);
      if (ctl) {
        ctl.cancelWanted = true;
        ctl.turn?.cancel();
      }
      return true;
    },
    async close() {
      if (moving) return (await moving).close();
      moving = Promise.resolve({ ask: () => Promise.reject(new TroupeError("closed")), cancel: () => false, close: async () => {} });
      // A message another command sent through this process is answered before the store closes.
      if (chains.size) io.say("(answering a message sent through this process before exiting…)");
      await Promise.all([...chains.values()]);
      await release();
    },
  };
}

const GONE = "the daemon went away; waiting for it to come back…";

export interface RemoteOptions {
  /** Print what reaches the chat between turns (interactive). */
  follow: boolean;
  /** How long a message waits for a daemon that went away. */
  waitMs: number;
  /** The troupe agent (pid) that lent the store is gone and nothing holds it: opens it here; true once the chat runs in-process. */
  takeOver?: (lenderPid: number) => Promise<boolean>;
}

/** This backend was replaced by another (the chat moved in-process): ask that one. */
class BackendReplaced extends Error {}

/** Where notes about the connection and messages that arrive between turns are printed. */
export interface AgentIo {
  /** A note (reconnecting, reconnected). */
  say(text: string): void;
  /** A message for the chat that came outside a turn (a subagent's report answered, a message-tool send). */
  message(text: string): void;
}

const withMedia = (m: { content: string; media?: unknown }) => `${m.content}${Array.isArray(m.media) ? m.media.map((p) => `\n[file] ${String(p)}`).join("") : ""}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Talks to the daemon over its control API: progress streams on a TTY, message-tool sends print as
 * they come. When the daemon goes away (a restart), it says so, waits for it to come back and
 * carries on: a message under way is sent again with the same idempotency key, so the daemon takes
 * it once and answers it once (from its mailbox if the answer came while nobody listened). With
 * `follow`, what reaches the chat between turns (replies to subagents' reports, message-tool sends)
 * is printed as it arrives, from the session's event stream.
 */
function remoteBackend(paths: DataPaths, first: DaemonClient | undefined, opts: AgentOptions, io: AgentIo, conn: RemoteOptions): Backend {
  let client = first as DaemonClient;
  let reconnecting: Promise<DaemonClient> | undefined;
  const closed = new AbortController();
  /** Messages this chat sent (their ids): their replies come on their own POST stream. */
  const own = new Set<string>();
  const printed = new Set<string>();
  let busy: { cancelled: boolean; wake: () => void } | undefined;
  let connectedAt = Date.now();

  const show = (m: { content: string; media?: unknown; deliveryId?: unknown; answers?: unknown }, print: (text: string) => void) => {
    const id = typeof m.deliveryId === "string" ? m.deliveryId : undefined;
    if (id && printed.has(id)) return;
    if (Array.isArray(m.answers) && m.answers.some((a) => own.has(String(a)))) return;
    if (id) printed.add(id);
    print(withMedia(m));
  };

  function lost(note: string): Promise<DaemonClient> {
    if (reconnecting) return reconnecting;
    io.say(`(${note})`);
    const lender = (client as DaemonClient | undefined)?.holder === "agent" ? client : undefined;
    reconnecting = (async () => {
      for (let misses = 0; ; misses++) {
        if (closed.signal.aborted) throw new TroupeError("closed");
        const next = await connectStoreHolder(paths, 1_000).catch(() => undefined);
        // The troupe agent that lent the store exited and nothing took it over (a starting gateway gets a head start): the chat goes on in-process.
        if (!next && lender && misses >= 3 && (await conn.takeOver?.(lender.pid))) throw new BackendReplaced();
        if (next) {
          client = next;
          io.say(next.holder === "agent" ? `(connected to troupe agent, pid ${next.pid})` : `(reconnected to the daemon, pid ${next.pid})`);
          reconnecting = undefined;
          startFollowing();
          return next;
        }
        await sleep(300);
      }
    })();
    reconnecting.catch(() => undefined);
    return reconnecting;
  }

  /** What reaches the chat between turns; an in-process `troupe agent` serving the store prints its own. */
  function startFollowing(): void {
    if (!conn.follow || closed.signal.aborted || client.holder === "agent") return;
    const since = connectedAt - 5_000;
    const current = client;
    current.follow(opts.session, since, (m) => show(m, io.message), closed.signal).then(
      ({ ended }) => {
        connectedAt = Date.now();
        void ended.then(() => {
          if (!closed.signal.aborted && client === current) void lost(GONE);
        });
      },
      (err: Error) => {
        if (!closed.signal.aborted && client === current) void lost(err instanceof DaemonGoneError ? GONE : `${err.message}; waiting for the daemon`);
      },
    );
  }
  if (first) startFollowing();
  else void lost("handing this chat over to the daemon; waiting for it to answer…");

  /** The client once the daemon answers, or undefined if the wait was cancelled or ran out. */
  async function connected(wait: { cancelled: boolean; wake: () => void }, deadline: number): Promise<DaemonClient | undefined> {
    if (!reconnecting) return client;
    const woken = new Promise<undefined>((resolve) => (wait.wake = () => resolve(undefined)));
    const timeout = Number.isFinite(deadline) ? [new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now())).unref())] : [];
    return Promise.race([reconnecting, woken, ...timeout]);
  }

  return {
    async ask(content, out) {
      const key = randomUUID();
      own.add(`api:${key}`);
      const wait = { cancelled: false, wake: () => {} };
      busy = wait;
      let state: string | undefined;
      let deadline = Date.now() + conn.waitMs;
      /** The troupe agent that took this message in, if one did: it ran there, and is not sent again elsewhere. */
      let answering: DaemonClient | undefined;
      try {
        for (;;) {
          const c = await connected(wait, deadline).catch((err: unknown) => {
            if (err instanceof BackendReplaced && answering) {
              throw new TroupeError(`troupe agent (pid ${answering.pid}), which was answering this message, exited before replying; troupe sessions show ${opts.session} shows whether it was answered`);
            }
            throw err;
          });
          if (wait.cancelled) return { content: "Stopped waiting for the daemon.", state: "cancelled" };
          if (!c) throw new TroupeError(`the daemon did not come back within ${Math.round(conn.waitMs / 1000)}s; once it runs, troupe sessions show ${opts.session} shows whether the message was answered`);
          try {
            const reply = await c.send(
              opts.session,
              content,
              (event, data) => {
                if (event === "accepted" && c.holder === "agent") answering = c;
                if (event === "progress") out.delta(String(data.delta));
                else if (event === "turn_state") {
                  state = String(data.state);
                  out.boundary();
                } else if (event === "message") show(data as { content: string }, (text) => out.message(text));
              },
              { idempotencyKey: key },
            );
            return { content: reply, state: state && TURN_FINAL_STATES.includes(state as never) ? state : undefined };
          } catch (err) {
            if (!(err instanceof DaemonGoneError) || closed.signal.aborted) throw err;
            out.reset();
            if (client === c) void lost(`${err.message}; waiting for it to come back…`);
            deadline = Date.now() + conn.waitMs;
          }
        }
      } finally {
        busy = undefined;
      }
    },
    cancel() {
      if (!busy) return false;
      if (reconnecting) {
        busy.cancelled = true;
        busy.wake();
      } else void client.send(opts.session, "/stop").catch(() => undefined);
      return true;
    },
    close: async () => closed.abort(),
  };
}

export interface AgentOptions {
  /** One message (`-` reads it from stdin); else an interactive prompt, or stdin when it is not a terminal. */
  message?: string;
  session: string;
  /** Render replies as Markdown on a terminal (--no-markdown turns it off). */
  markdown?: boolean;
}

/** How long `agent -m` waits for a daemon that went away mid-message (a restart) before it gives up. */
const ONE_MESSAGE_WAIT_MS = 60_000;

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
  // Notes go to stderr until the prompt takes them over (printing above the line being typed).
  const io: AgentIo = { say: (text) => process.stderr.write(`${text}\n`), message: (text) => process.stdout.write(`${text}\n`) };
  const conn: RemoteOptions = { follow: !oneMessage, waitMs: oneMessage ? ONE_MESSAGE_WAIT_MS : Number.POSITIVE_INFINITY };
  // The daemon, or an in-process `troupe agent` lending its store; else this process opens it.
  let client = await connectStoreHolder(loaded.paths);
  let current: Backend;
  if (client) current = remoteBackend(loaded.paths, client, opts, io, conn);
  else {
    try {
      current = await localBackend(loaded, opts, io, conn);
    } catch (err) {
      // Another process took the store just now: it serves the control API in a moment.
      if (!(err instanceof StoreLockedError)) throw err;
      client = await waitForHolder(loaded.paths, HOLDER_WAIT_MS);
      if (!client) throw err;
      current = remoteBackend(loaded.paths, client, opts, io, conn);
    }
  }
  conn.takeOver = async (lenderPid) => {
    const local = await localBackend(loaded, opts, io, conn).catch(() => undefined);
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
  const where = !client ? "in-process" : client.holder === "agent" ? `through troupe agent pid ${client.pid}, which holds the store` : `daemon pid ${client.pid}`;
  try {
    if (oneMessage) return await askOnce(backend, content!, createPrinter(process.stdout, printerOptions));
    await interactive(backend, opts, where, printerOptions, join(loaded.paths.dataDir, "history", "cli_history"), io);
    return 0;
  } finally {
    await backend.close();
  }
}

/** How long a command that found the store locked waits for its holder to serve the control API. */
const HOLDER_WAIT_MS = 10_000;

async function waitForHolder(paths: DataPaths, ms: number): Promise<DaemonClient | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const found = await connectStoreHolder(paths, 1_000).catch(() => undefined);
    if (found) return found;
    await sleep(200);
  }
  return undefined;
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

async function interactive(backend: Backend, opts: AgentOptions, where: string, printerOptions: PrinterOptions, historyFile: string, io: AgentIo): Promise<void> {
  const HISTORY_SIZE = 1000;
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
  io.message = (text) => (current ? current.message(text) : above(printerOptions.markdown ? renderMarkdown(text, process.stdout.columns) : text));

  const handle = async (content: string) => {
    const printer = createPrinter(process.stdout, printerOptions);
    current = printer;
    try {
      const answer = await backend.ask(content, printer);
      printer.finish(answer.content);
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
