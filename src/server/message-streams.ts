import type { IncomingMessage, ServerResponse } from "node:http";
import { filter, merge } from "rxjs";
import { apiReplies } from "../channels/api.js";
import { TroupeError } from "../errors.js";
import type { Daemon } from "../daemon-types.js";
import { StoreUnavailableError } from "../store/health.js";
import { HttpError, json, refuseStore } from "./request-io.js";
import { openSse } from "./sse.js";

/**
 * The control API's event streams of a session's messages: a message in, answered on its stream
 * (POST /api/sessions/:key/messages), and what reaches the session's API chat outside any POST
 * (GET /api/sessions/:key/events). Each stream open is tracked, so that a stopping daemon tells it
 * why it ends (`closeAll`).
 */
export function messageStreams(daemon: Daemon) {
  const { store, bus } = daemon;
  /** The refusal of a message while the store is failing: 507 (disk full) or 503, the cause without a path, and when to retry. */
  function refusal(err: StoreUnavailableError): HttpError {
    return new HttpError(err.status, err.message);
  }

  /** Open event streams: told `shutting_down` and ended before the server closes. */
  const streams = new Set<{ send(event: string, data: unknown): void; end(): Promise<void> }>();
  function track(req: IncomingMessage, res: ServerResponse) {
    const sse = openSse(res);
    const entry = { send: sse.send, end: () => new Promise<void>((resolve) => res.end(resolve)) };
    streams.add(entry);
    res.on("close", () => streams.delete(entry));
    return {
      ...sse,
      done: () => {
        streams.delete(entry);
        res.end();
      },
    };
  }

  /**
   * A message in, answered on its event stream. With an idempotency key the message id is derived
   * from it: a retried POST (the client lost the stream when the daemon stopped) is not taken twice,
   * and is answered with the reply the first one got, from the chat's mailbox if it was delivered already.
   */
  function postMessage(req: IncomingMessage, res: ServerResponse, key: string, content: string, idempotencyKey: string | undefined, media: string[] = []) {
    const down = daemon.storage().store;
    if (down.state === "failing") throw refusal(new StoreUnavailableError(down.failure ?? "io-error"));
    // Events are held until the message is accepted: a message the store refuses is answered with a
    // status code (below), not with a 200 and an error event.
    let sse: ReturnType<typeof track> | undefined;
    const held: Array<[string, unknown]> = [];
    const send = (event: string, data: unknown) => (sse ? sse.send(event, data) : void held.push([event, data]));
    let id: string | undefined;
    let answered = false;
    const early: Array<{ content: string; answers: string[]; deliveryId: string; alreadySent?: boolean }> = [];
    const reply = (e: { content: string; answers: string[]; deliveryId: string; alreadySent?: boolean }) => {
      if (answered) return;
      answered = true;
      send("reply", { content: e.content, answers: e.answers, deliveryId: e.deliveryId, ...(e.alreadySent ? { alreadySent: true } : {}) });
      stop();
      sse?.done();
    };
    const sub = merge(
      bus.ofType("progress", "tool_hint", "turn_state", "model_retry", "model_fallback").pipe(filter((e) => e.sessionKey === key)),
      bus.ofType("outbound").pipe(filter((e) => e.channel === "api")),
    ).subscribe((e) => {
      if (e.type !== "outbound") return send(e.type, e);
      if (!id) early.push(e);
      if (id && e.answers.includes(id)) reply(e);
      else if (e.chatId === key && e.answers.length === 0) send("message", { content: e.content, media: e.media, deliveryId: e.deliveryId, at: e.at });
    });
    let poll: NodeJS.Timeout | undefined;
    const stop = () => {
      sub.unsubscribe();
      clearInterval(poll);
    };
    req.on("close", stop);
    res.on("close", stop);
    const fromMailbox = async () => {
      const found = (await apiReplies(store, key)).find((r) => r.answers.includes(id!));
      if (found) reply(found);
    };
    // An API chat is its session: replies come back on the chat named by the session key.
    daemon.accept("api", { chatId: key, senderId: "api", content, sessionKey: key, messageId: idempotencyKey, ...(media.length ? { media } : {}) }).then(
      async (accepted) => {
        id = accepted;
        // The client went away while the message was taken in: it is answered into the mailbox.
        if (res.destroyed) return stop();
        sse = track(req, res);
        sse.send("accepted", { id, sessionKey: key });
        for (const [event, data] of held.splice(0)) sse.send(event, data);
        const before = early.find((e) => e.answers.includes(accepted));
        if (before) return reply(before);
        if (!idempotencyKey) return;
        // A retry: its reply may be in the mailbox already, or reach it from the outbox a start left pending.
        await fromMailbox();
        if (!answered) poll = setInterval(() => void fromMailbox().catch(() => undefined), 1_000);
      },
      (err: Error) => {
        stop();
        if (err instanceof StoreUnavailableError) return refuseStore(res, err.status, err.message);
        daemon.logger.error({ err }, "could not take a message in");
        json(res, err instanceof TroupeError ? 503 : 500, { error: err.message });
      },
    );
  }

  /**
   * What reaches a session's API chat outside any POST: message-tool sends, replies to subagent
   * reports, and every reply (each names the ids it answers). `?since=<ms>` first sends what the
   * mailbox got after that time, so a client that reconnects misses nothing.
   */
  async function sessionEvents(req: IncomingMessage, res: ServerResponse, key: string, since: number | undefined) {
    const sse = track(req, res);
    const seen = new Set<string>();
    const send = (e: { content: string; media: string[]; answers: string[]; deliveryId: string; at: number }) => {
      if (seen.has(e.deliveryId)) return;
      seen.add(e.deliveryId);
      sse.send("message", { content: e.content, media: e.media, answers: e.answers, deliveryId: e.deliveryId, at: e.at });
    };
    const live: Parameters<typeof send>[0][] = [];
    let caughtUp = false;
    const sub = bus
      .ofType("outbound")
      .pipe(filter((e) => e.channel === "api" && e.chatId === key))
      .subscribe((e) => (caughtUp ? send(e) : live.push(e)));
    const keepAlive = setInterval(() => sse.comment("keep-alive"), 15_000);
    const stop = () => {
      sub.unsubscribe();
      clearInterval(keepAlive);
    };
    req.on("close", stop);
    res.on("close", stop);
    if (since !== undefined) for (const r of await apiReplies(store, key)) if (r.at > since) send(r);
    caughtUp = true;
    live.forEach(send);
    sse.send("ready", { sessionKey: key });
  }

  /** Every open stream told `shutting_down` and ended (at most 1 s), before the server closes. */
  async function closeAll(): Promise<void> {
    const ended = [...streams].map((stream) => {
      stream.send("shutting_down", { reason: "the daemon is stopping; a turn under way resumes when it starts again" });
      return stream.end();
    });
    await Promise.race([Promise.all(ended), new Promise((r) => setTimeout(r, 1_000).unref())]);
  }

  return { postMessage, sessionEvents, closeAll };
}
