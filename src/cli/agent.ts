import { createInterface } from "node:readline";
import type { LoadedConfig } from "../config/index.js";
import { createAgentRuntime, type AgentRuntime } from "../runtime.js";
import { connectDaemon, type DaemonClient } from "./client.js";
import { outboxDeliveredOps, pendingOutbox } from "../store/outbox.js";
import type { TurnHandle } from "../../actors/turn.js";

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

async function oneTurn(runtime: AgentRuntime, opts: AgentOptions, content: string, onTurn?: (t: TurnHandle) => void): Promise<void> {
  const tty = Boolean(process.stdout.isTTY);
  const live = tty ? streamTo(runtime, process.stdout) : undefined;
  try {
    const reply = await runtime.conversation.handle({ sessionKey: opts.session, ...sessionParts(opts.session), content }, onTurn);
    // What streamed was the model's text; a reply that did not stream (a command, an error) prints whole.
    if (live?.streamed() && reply.state === "responded") process.stdout.write("\n");
    else process.stdout.write(`${reply.content}\n`);
  } finally {
    live?.stop();
  }
}

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

async function localBackend(loaded: LoadedConfig, opts: AgentOptions): Promise<Backend> {
  const runtime = await createAgentRuntime(loaded);
  const stopDelivery = await deliverToTerminal(runtime);
  let running: TurnHandle | undefined;
  return {
    async ask(content) {
      await oneTurn(runtime, opts, content, (t) => (running = t));
      running = undefined;
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
