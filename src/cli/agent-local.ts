import type { LoadedConfig } from "../config/index.js";
import { createAgentRuntime, type AgentRuntime } from "../runtime.js";
import { inboxDeleteOps } from "../store/inbox.js";
import { outboxDeliveredOps, outboxPutOp, pendingOutbox } from "../store/outbox.js";
import type { Store, StoreOp } from "../store/store.js";
import { getTurn, listOpenTurns, type TurnRecord } from "../store/turns.js";
import { replyRecord } from "../../actors/session-turn.js";
import type { TurnHandle, TurnResult } from "../../actors/turn.js";
import type { TurnInput } from "../../machines/turn.machine.js";
import { isStop, NOTHING_RUNS, type Backend } from "./agent-backend.js";
import type { AgentOptions } from "./agent.js";
import type { Printer } from "./printer.js";
import { createProgress, type Progress } from "./progress.js";
import { when } from "./sessions.js";

// The in-process backend of `troupe agent`, loaded only when no daemon runs: the whole runtime.

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

/**
 * The conversation in this process. A `cli` turn is this process's: the daemon does not resume it
 * (it has no cli channel). So before the session takes anything new, a turn left interrupted there
 * (a process killed mid-turn) is finished from its checkpoint and its reply printed: a session's
 * turns run one at a time, or the newer turn's messages would land before the older one's.
 */
export async function localBackend(loaded: LoadedConfig, opts: AgentOptions): Promise<Backend> {
  const runtime = await createAgentRuntime(loaded);
  let printer: Printer | undefined;
  let progress: Progress | undefined;
  const stopDelivery = await deliverToTerminal(runtime, (text) => (printer ? printer.message(text) : process.stdout.write(`${text}\n`)));
  const mine = (e: { sessionKey: string }) => e.sessionKey === opts.session;
  const subs = [
    runtime.bus.ofType("progress").subscribe((e) => mine(e) && (progress?.text(), printer?.delta(e.delta))),
    runtime.bus.ofType("turn_state").subscribe((e) => mine(e) && (printer?.boundary(), progress?.state(e.state))),
    runtime.bus.ofType("tool_hint").subscribe((e) => mine(e) && progress?.tool(e.tool, e.hint)),
    runtime.bus.ofType("model_retry").subscribe((e) => mine(e) && progress?.retry(e.status, e.delayMs)),
  ];
  let asking = false;
  let running: TurnHandle | undefined;
  let cancelWanted = false;
  const track = (turn: TurnHandle) => {
    running = turn;
    if (cancelWanted) turn.cancel();
    return turn;
  };

  async function finishInterrupted(out: Printer): Promise<void> {
    const interrupted = await interruptedTurns(runtime.store, opts.session);
    // Whether an interrupted MCP call is re-run depends on its tool's annotations: the servers must have had their first try.
    if (interrupted.length) await runtime.mcp?.firstAttempts(30_000);
    for (const record of interrupted) {
      if (cancelWanted) return;
      process.stderr.write(`(finishing a turn interrupted at ${when(record.updatedAt)})\n`);
      const result = await track(runtime.conversation.resume(record, channelReplyOps(record.input as TurnInput))).done;
      out.finish(result.output.reply);
      out.reset();
    }
  }

  return {
    async ask(content, out) {
      // Nothing runs while this process waits for a message: /stop has nothing to cancel.
      if (isStop(content)) return { content: NOTHING_RUNS };
      asking = true;
      printer = out;
      progress = createProgress(out);
      try {
        await finishInterrupted(out);
        if (cancelWanted) return { content: "Stopped.", state: "cancelled" };
        const reply = await runtime.conversation.handle({ sessionKey: opts.session, ...sessionParts(opts.session), content }, track);
        return { content: reply.content, state: reply.state };
      } finally {
        progress?.stop();
        progress = undefined;
        asking = false;
        running = undefined;
        cancelWanted = false;
      }
    },
    cancel() {
      if (!asking) return false;
      cancelWanted = true;
      running?.cancel();
      return true;
    },
    async close() {
      subs.forEach((sub) => sub.unsubscribe());
      await stopDelivery();
      await runtime.close();
    },
  };
}

