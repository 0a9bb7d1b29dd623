import { TroupeError } from "../errors.js";
import type { DataPaths } from "../paths.js";
import { TURN_FINAL_STATES } from "../../machines/turn-states.js";
import { BackendReplaced, isStop, type AgentIo, type Backend, type ChatOptions, type RemoteOptions } from "./agent-backend.js";
import { connectStoreHolder, DaemonGoneError, type DaemonClient } from "./client.js";
import { createProgress } from "./progress.js";

const GONE = "the daemon went away; waiting for it to come back…";
const withMedia = (m: { content: string; media?: unknown }) => `${m.content}${Array.isArray(m.media) ? m.media.map((p) => `\n[file] ${String(p)}`).join("") : ""}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let sent = 0;
/**
 * A message's idempotency key, unique to this process (pid, start, a count) and random past that:
 * without node:crypto, which the client would load for this alone (~3 ms of its start).
 */
const newKey = () => `cli-${process.pid.toString(36)}-${Date.now().toString(36)}-${(sent++).toString(36)}-${Math.random().toString(36).slice(2, 12)}`;

/**
 * Talks to the daemon over its control API: progress streams on a TTY, message-tool sends print as
 * they come. When the daemon goes away (a restart), it says so, waits for it to come back and
 * carries on: a message under way is sent again with the same idempotency key, so the daemon takes
 * it once and answers it once (from its mailbox if the answer came while nobody listened). With
 * `follow`, what reaches the chat between turns (replies to subagents' reports, message-tool sends)
 * is printed as it arrives, from the session's event stream.
 */
export function remoteBackend(paths: DataPaths, first: DaemonClient | undefined, opts: ChatOptions, io: AgentIo, conn: RemoteOptions): Backend {
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
        // A daemon without the event stream (older than this CLI) still answers messages: only the extras are missed.
        if (!closed.signal.aborted && client === current && err instanceof DaemonGoneError) void lost(GONE);
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
      const key = newKey();
      own.add(`api:${key}`);
      const wait = { cancelled: false, wake: () => {} };
      busy = wait;
      let state: string | undefined;
      let deadline = Date.now() + conn.waitMs;
      /** The troupe agent that took this message in, if one did: it ran there, and is not sent again elsewhere. */
      let answering: DaemonClient | undefined;
      const progress = createProgress(out);
      // A /stop is a command, not a turn: the turn events on its stream (text, tools, its end: cancelled) are the stopped turn's, not its own.
      const ownsTurn = !isStop(content);
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
                if (!ownsTurn && event !== "message") return;
                if (event === "progress") {
                  progress.text();
                  out.delta(String(data.delta));
                } else if (event === "turn_state") {
                  state = String(data.state);
                  out.boundary();
                  progress.state(state);
                } else if (event === "tool_hint") progress.tool(String(data.tool), String(data.hint));
                else if (event === "model_retry") progress.retry(typeof data.status === "number" ? data.status : null, Number(data.delayMs));
                else if (event === "model_fallback") progress.fallback(String(data.from), String(data.to));
                else if (event === "message") show(data as { content: string }, (text) => out.message(text));
              },
              { idempotencyKey: key },
            );
            return { content: reply.content, state: state && TURN_FINAL_STATES.includes(state as never) ? state : undefined, alreadySent: reply.alreadySent };
          } catch (err) {
            if (!(err instanceof DaemonGoneError) || closed.signal.aborted) throw err;
            progress.stop();
            out.reset();
            if (client === c) void lost(`${err.message}; waiting for it to come back…`);
            deadline = Date.now() + conn.waitMs;
          }
        }
      } finally {
        progress.stop();
        busy = undefined;
      }
    },
    cancel() {
      if (!busy) return false;
      if (reconnecting) {
        busy.cancelled = true;
        busy.wake();
      } else {
        // Its answer belongs to this chat's Ctrl-C: not printed again from the session's event stream.
        const key = newKey();
        own.add(`api:${key}`);
        void client.send(opts.session, "/stop", undefined, { idempotencyKey: key }).catch(() => undefined);
      }
      return true;
    },
    close: async () => closed.abort(),
  };
}
