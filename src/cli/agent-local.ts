import type { LoadedConfig } from "../config/index.js";
import { TroupeError } from "../errors.js";
import { createAgentRuntime, type AgentRuntime } from "../agent-runtime.js";
import type { RuntimeStart } from "../runtime-start.js";
import type { AgentHost } from "../server/agent-api.js";
import type { ControlServer } from "../server/http.js";
import { outboxDeliveredOps, pendingOutbox } from "../store/outbox.js";
import type { Store } from "../store/store.js";
import { getTurn, listOpenTurns, type TurnRecord } from "../store/turns.js";
import type { TurnHandle } from "../../actors/turn.js";
import type { TurnInput } from "../../machines/turn.machine.js";
import { isStop, NOTHING_RUNS, type AgentIo, type Answer, type Backend, type ChatOptions, type RemoteOptions } from "./agent-backend.js";
import { removeAgentRecord, removeOwnAgentRecord, writeAgentRecord } from "./agent-record.js";
import { remoteBackend } from "./agent-remote.js";
import type { Printer } from "./printer.js";
import { printable } from "./printable.js";
import { inboxId, wasSeen } from "../store/inbox.js";
import { answerTaken, channelReplyOps, takenAnswer } from "./taken-message.js";
import { createProgress, type Progress } from "./progress.js";
import { when } from "./sessions.js";

// The in-process backend of `troupe agent`, loaded only when nothing holds the store: the whole runtime.

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
 * The terminal as the "cli" channel: what the message tool sends to it is printed, then marked
 * delivered. Entries left from an earlier run that stopped before printing them come first (`earlier`).
 */
async function deliverToTerminal(runtime: AgentRuntime, print: (text: string, earlier: boolean) => void, finishing: () => boolean): Promise<() => Promise<void>> {
  let chain = Promise.resolve();
  const deliver = (m: { deliveryId: string; content: string; media: string[] }, earlier = false) => {
    chain = chain.then(async () => {
      print(`${m.content}${m.media.map((p) => `\n[file] ${p}`).join("")}`, earlier);
      await runtime.store.batch(outboxDeliveredOps(m.deliveryId, Date.now()), { sync: true });
    });
  };
  for (const m of await pendingOutbox(runtime.store, "cli")) deliver(m, true);
  const sub = runtime.bus.ofType("outbound").subscribe((e) => {
    // A send of an interrupted turn being finished is an earlier turn's too.
    if (e.channel === "cli") deliver(e, finishing());
  });
  return async () => {
    sub.unsubscribe();
    await chain;
  };
}

/**
 * How long this process holds the store before it serves the control API to other troupe commands
 * (TROUPE_LEND_AFTER_MS sets another wait, in ms: the tests make it long).
 */
const LEND_AFTER_MS = 100;
const lendAfterMs = () => {
  const set = Number(process.env.TROUPE_LEND_AFTER_MS || Number.NaN);
  return Number.isFinite(set) && set >= 0 ? set : LEND_AFTER_MS;
};

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
export async function localBackend(loaded: LoadedConfig, opts: ChatOptions, io: AgentIo, conn: RemoteOptions, started?: RuntimeStart): Promise<Backend> {
  const runtime = await createAgentRuntime(loaded, { consoleLogs: opts.logs, importNanobot: true }, started);
  let printer: Printer | undefined;
  let progress: Progress | undefined;
  /** An interrupted turn of this chat's session is being finished (before a message of it). */
  let finishing = false;
  const stopDelivery = await deliverToTerminal(runtime, (text, earlier) => {
    // `agent -m`'s stdout is its own reply's: what an earlier turn sent to the chat goes to stderr, labelled.
    if (opts.oneShot && earlier) process.stderr.write(`(sent to this chat by an earlier turn:)\n${printable(text)}\n`);
    else if (printer) printer.message(text);
    else io.message(text);
  }, () => finishing);
  const mine = (e: { sessionKey: string }) => e.sessionKey === opts.session;
  const subs = [
    runtime.bus.ofType("progress").subscribe((e) => mine(e) && (progress?.text(), printer?.delta(e.delta))),
    runtime.bus.ofType("turn_state").subscribe((e) => mine(e) && (printer?.boundary(), progress?.state(e.state))),
    runtime.bus.ofType("tool_hint").subscribe((e) => mine(e) && progress?.tool(e.tool, e.hint)),
    runtime.bus.ofType("model_retry").subscribe((e) => mine(e) && progress?.retry(e.status, e.delayMs)),
    runtime.bus.ofType("model_fallback").subscribe((e) => mine(e) && progress?.fallback(e.from, e.to)),
  ];
  /** Each session's messages run one after another, this chat's and those sent through the API alike. */
  const chains = new Map<string, Promise<unknown>>();
  const queued = new Map<string, number>();
  const running = new Map<string, Running>();
  let asking = false;
  let askCancelled = false;
  let moving: Promise<Backend> | undefined;
  let moved: Backend | undefined;
  /** Interrupted turns of messages the daemon took in (by message id), being finished here. */
  const resuming = new Map<string, Promise<unknown>>();

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
    const interrupted = await interruptedTurns(runtime.store, sessionKey);
    // Whether an interrupted MCP call is re-run depends on its tool's annotations: the servers must have had their first try.
    if (interrupted.length) await runtime.mcp?.firstAttempts(30_000);
    for (const record of interrupted) {
      if (ctl.cancelWanted) return;
      process.stderr.write(`(finishing a turn interrupted at ${when(record.updatedAt)})\n`);
      const input = record.input as TurnInput;
      const done = track(runtime.conversation.resume(record, channelReplyOps(input))).done;
      if (input.messageId) resuming.set(input.messageId, done);
      const result = await done.finally(() => input.messageId && resuming.delete(input.messageId));
      if (!out) continue;
      if (!opts.oneShot) {
        out.finish(result.output.reply);
        out.reset();
        continue;
      }
      // `agent -m` prints its own reply alone on stdout, as nanobot's: the earlier message's goes to stderr, labelled.
      out.status(undefined);
      process.stderr.write(`(the interrupted turn's reply:)\n${printable(result.output.reply)}\n`);
    }
  }

  /**
   * One message of a session, after what runs of it; `out` (this chat's) shows its progress. `taken`:
   * the id of this message the daemon took in before it stopped; its answer is that turn's reply.
   */
  function run(sessionKey: string, content: string, out?: Printer, cancelled = () => false, taken?: string): Promise<Answer> {
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
      if (out) {
        // A one-shot's stdout is its own reply's: an interrupted turn finished first does not stream there.
        printer = opts.oneShot ? undefined : out;
        progress = createProgress(out);
      }
      try {
        finishing = sessionKey === opts.session;
        await finishInterrupted(sessionKey, out, track, ctl);
        finishing = false;
        if (out) printer = out;
        if (ctl.cancelWanted) return { content: "Stopped.", state: "cancelled" };
        if (taken) return await answerTaken(runtime, sessionKey, taken, track);
        const reply = await runtime.conversation.handle({ sessionKey, ...sessionParts(sessionKey), content }, track);
        return { content: reply.content, state: reply.state, alreadySent: reply.alreadySent };
      } finally {
        finishing = false;
        running.delete(sessionKey);
        if (out) {
          progress?.stop();
          progress = undefined;
          printer = undefined;
        }
      }
    });
  }

  /** A message sent with its client's idempotency key: one the daemon took in before it stopped is answered once. */
  async function runKeyed(sessionKey: string, content: string, idempotencyKey: string): Promise<Answer> {
    const id = inboxId("api", idempotencyKey);
    if (!(await wasSeen(runtime.store, id))) return run(sessionKey, content);
    // Its interrupted turn is being finished here (before this chat's message): its reply, without waiting for the rest.
    await resuming.get(id)?.catch(() => undefined);
    return (await takenAnswer(runtime.store, sessionKey, id)) ?? run(sessionKey, content, undefined, () => false, id);
  }

  let server: ControlServer | undefined;
  const release = async () => {
    clearTimeout(lendTimer);
    await serving;
    await server?.close();
    // The store is still held (closed below): the record is this process's.
    await removeOwnAgentRecord(loaded.paths).catch(() => undefined);
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
    run: (sessionKey, content, idempotencyKey) => (idempotencyKey ? runKeyed(sessionKey, content, idempotencyKey) : run(sessionKey, content)),
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
  // Lent once this process has held the store for a moment (LEND_AFTER_MS): a command that finds the store held
  // meanwhile waits for its holder to answer (waitForHolder), and a message answered sooner (a
  // one-shot `agent -m` against a fast model) never pays for serving (listening loads node:cluster,
  // node:child_process and more; ~2.5 ms of a cold `agent -m`, measured). Released, after it is up, when the chat ends.
  let serving: Promise<void> = Promise.resolve();
  let lendTimer: NodeJS.Timeout | undefined = setTimeout(() => {
    lendTimer = undefined;
    serving = (async () => {
      try {
        // Loaded only when it serves: a one-shot message answered first never needs the server's code.
        const [{ startAgentServer }, { ensureToken }] = await Promise.all([import("../server/agent-api.js"), import("../server/token.js")]);
        server = await startAgentServer(host, await ensureToken(loaded.paths.tokenFile));
        await writeAgentRecord(loaded.paths, server.url);
      } catch (err) {
        // The chat works without it; only the other commands cannot reach the store meanwhile.
        runtime.logger.warn({ err }, "could not serve the control API for other troupe commands");
      }
    })();
  }, lendAfterMs());

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
