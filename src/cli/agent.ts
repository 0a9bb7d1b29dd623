import { createInterface } from "node:readline";
import type { LoadedConfig } from "../config/index.js";
import { createAgentRuntime, type AgentRuntime } from "../runtime.js";
import { connectDaemon, type DaemonClient } from "./client.js";
import { when } from "./sessions.js";
import { inboxDeleteOps } from "../store/inbox.js";
import { outboxDeliveredOps, outboxPutOp, pendingOutbox } from "../store/outbox.js";
import type { Store, StoreOp } from "../store/store.js";
import { getTurn, listOpenTurns, type TurnRecord } from "../store/turns.js";
import { replyRecord } from "../../actors/session-turn.js";
import type { TurnFinalState, TurnHandle, TurnResult } from "../../actors/turn.js";
import type { TurnInput } from "../../machines/turn.machine.js";

export interface AgentOptions {
  message?: string;
  session: string;
}

const sessionParts = (key: string) => {
  const i = key.indexOf(":");
  return i > 0 ? { channel: key.slice(0, i), chatId: key.slice(i + 1) } : { channel: "cli", chatId: key };
};

/** Streams the reply to a TTY as it arrives; returns whether anything was streamed. */
function streamTo(runtime: AgentRuntime, out: NodeJS.WriteStream): { streamed: () => boolean; stop: () => void } {
  let streamed = false;
  const sub = runtime.bus.ofType("progress").subscribe((e) => {
    streamed = true;
    out.write(e.delta);
  });
  return { streamed: () => streamed, stop: () => sub.unsubscribe() };
}

/** Prints what `run` answers: streamed on a TTY as it arrives, else whole. */
async function printReply(runtime: AgentRuntime, run: () => Promise<{ content: string; state?: TurnFinalState }>): Promise<void> {
  const tty = Boolean(process.stdout.isTTY);
  const live = tty ? streamTo(runtime, process.stdout) : undefined;
  try {
    const reply = await run();
    // What streamed was the model's text; a reply that did not stream (a command, an error) prints whole.
    if (live?.streamed() && reply.state === "responded") process.stdout.write("\n");
    else process.stdout.write(`${reply.content}\n`);
  } finally {
    live?.stop();
  }
}

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
async function deliverToTerminal(runtime: AgentRuntime): Promise<() => Promise<void>> {
  let chain = Promise.resolve();
  const deliver = (m: { deliveryId: string; content: string; media: string[] }) => {
    chain = chain.then(async () => {
      process.stdout.write(`${m.content}${m.media.map((p) => `\n[file] ${p}`).join("")}\n`);
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

/** Where the conversation happens: in this process, or in the running daemon. */
interface Backend {
  /** Sends one message and prints what comes back. */
  ask(content: string): Promise<void>;
  /** Cancels the running turn (Ctrl-C); false when nothing runs. */
  cancel(): boolean;
  close(): Promise<void>;
}

/**
 * The conversation in this process. A `cli` turn is this process's: the daemon does not resume it
 * (it has no cli channel). So before the session takes anything new, a turn left interrupted there
 * (a process killed mid-turn) is finished from its checkpoint and its reply printed: a session's
 * turns run one at a time, or the newer turn's messages would land before the older one's.
 */
async function localBackend(loaded: LoadedConfig, opts: AgentOptions): Promise<Backend> {
  const runtime = await createAgentRuntime(loaded);
  const stopDelivery = await deliverToTerminal(runtime);
  let running: TurnHandle | undefined;
  const track = (turn: TurnHandle) => (running = turn);

  async function finishInterrupted(): Promise<void> {
    for (const record of await interruptedTurns(runtime.store, opts.session)) {
      process.stderr.write(`(finishing a turn interrupted at ${when(record.updatedAt)})\n`);
      await printReply(runtime, async () => {
        const result = await track(runtime.conversation.resume(record, channelReplyOps(record.input as TurnInput))).done;
        return { content: result.output.reply, state: result.state };
      });
    }
  }

  return {
    async ask(content) {
      try {
        await finishInterrupted();
        await printReply(runtime, () => runtime.conversation.handle({ sessionKey: opts.session, ...sessionParts(opts.session), content }, track));
      } finally {
        running = undefined;
      }
    },
    cancel: () => (running ? (running.cancel(), true) : false),
    async close() {
      await stopDelivery();
      await runtime.close();
    },
  };
}

/** Talks to the daemon over its control API: progress streams on a TTY, message-tool sends print as they come. */
function remoteBackend(client: DaemonClient, opts: AgentOptions): Backend {
  let busy = false;
  return {
    async ask(content) {
      busy = true;
      const tty = Boolean(process.stdout.isTTY);
      let streamed = false;
      try {
        const reply = await client.send(opts.session, content, (event, data) => {
          if (event === "progress" && tty) {
            streamed = true;
            process.stdout.write(String(data.delta));
          } else if (event === "message") process.stdout.write(`${String(data.content)}\n`);
        });
        process.stdout.write(streamed ? "\n" : `${reply}\n`);
      } finally {
        busy = false;
      }
    },
    cancel() {
      if (!busy) return false;
      void client.send(opts.session, "/stop").catch(() => undefined);
      return true;
    },
    close: async () => {},
  };
}

/** `troupe agent`: one message with -m, else an interactive prompt. Uses the running daemon if there is one. */
export async function runAgent(loaded: LoadedConfig, opts: AgentOptions): Promise<number> {
  const client = await connectDaemon(loaded.paths);
  const backend = client ? remoteBackend(client, opts) : await localBackend(loaded, opts);
  try {
    if (opts.message !== undefined) await backend.ask(opts.message);
    else await interactive(backend, opts, client ? `daemon pid ${client.pid}` : "in-process");
    return 0;
  } finally {
    await backend.close();
  }
}

async function interactive(backend: Backend, opts: AgentOptions, where: string): Promise<void> {
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: Boolean(process.stdin.isTTY), historySize: 500 });
  rl.on("SIGINT", () => {
    if (backend.cancel()) {
      process.stdout.write("\n(cancelling…)\n");
    } else {
      process.stdout.write("\n(Ctrl-D to exit)\n");
      rl.prompt();
    }
  });
  if (process.stdin.isTTY) console.log(`troupe agent — session ${opts.session} (${where}). /help for commands, Ctrl-C cancels a turn, Ctrl-D exits.`);
  rl.setPrompt("you> ");
  rl.prompt();
  for await (const line of rl) {
    const content = line.trim();
    if (content) await backend.ask(content);
    rl.prompt();
  }
}
