import { randomUUID } from "node:crypto";
import type { Bus } from "./bus/index.js";
import type { ChannelInbound } from "./channels/channel.js";
import { TroupeError } from "./errors.js";
import { fault } from "./fault.js";
import type { Logger } from "./log/logger.js";
import { parseSessionKey } from "./session-key.js";
import { inboxId, inboxPutOps, wasSeen, type InboxRecord } from "./store/inbox.js";
import type { Store, StoreOp } from "./store/store.js";
import type { SessionMessage } from "../machines/session.machine.js";

export interface InboundDeps {
  store: Store;
  bus: Bus;
  logger: Logger;
  /** False once shutdown began: nothing more is taken in. */
  accepting(): boolean;
  /** Hands a stored message to its session (the supervisor routes it). */
  route(sessionKey: string, message: SessionMessage): void;
  now?: () => number;
}

/**
 * Where every channel's messages come in: written to the inbox (synced) before the channel
 * acknowledges them, then routed to their sessions. A batch (one getUpdates answer) is one synced
 * write, with the channel's own ops (its poll offset): after a crash either all of it is stored or
 * none, and the platform hands the same messages out again.
 */
export function createInbound(deps: InboundDeps) {
  const now = deps.now ?? Date.now;
  /**
   * Arrival stamps strictly increase: the inbox lists a session's messages by `at`, then by id, and
   * ids do not sort as numbers ("telegram:42:10" before "telegram:42:9"); a batch is taken in one
   * millisecond.
   */
  let lastAt = 0;
  const stamp = () => (lastAt = Math.max(now(), lastAt + 1));
  /** Ids being taken in now, each with the call taking it (settled when its write is done or failed). */
  const inFlight = new Map<string, Promise<void>>();

  /** Takes messages in with `ops`, in one synced batch; resolves with their ids (a redelivered one's too) once they are routed. */
  async function acceptAll(channel: string, inbounds: ChannelInbound[], ops: StoreOp[] = []): Promise<string[]> {
    if (!deps.accepting()) throw new TroupeError("troupe is shutting down; try again in a moment");
    // Checked here, where every channel's messages come in: the store lists a session's records by its key.
    const taking = inbounds.map((inbound) => ({
      inbound,
      id: inboxId(channel, inbound.messageId ?? randomUUID()),
      /** The other ids it stands for (a Telegram album's later items): seen under them too. */
      also: inbound.messageId ? (inbound.otherMessageIds ?? []).map((other) => inboxId(channel, other)) : [],
      sessionKey: parseSessionKey(inbound.sessionKey ?? `${channel}:${inbound.chatId}`),
    }));
    // A platform redelivering a message we already took (same id) is not answered twice. One still
    // being taken in by another call (a poll in flight beside its channel's restart) is waited for
    // first, then looked up: taken in once, or here if that call's write failed.
    const others = new Set<Promise<void>>();
    let done!: () => void;
    const ours = new Promise<void>((resolve) => (done = resolve));
    for (const { inbound, id, also } of taking) {
      if (!inbound.messageId) continue;
      for (const known of [id, ...also]) {
        const other = inFlight.get(known);
        if (other && other !== ours) others.add(other);
        else inFlight.set(known, ours);
      }
    }
    try {
      await Promise.all(others);
      return await takeIn(channel, taking, ops);
    } finally {
      for (const [id, p] of inFlight) if (p === ours) inFlight.delete(id);
      done();
    }
  }

  async function takeIn(channel: string, taking: Array<{ inbound: ChannelInbound; id: string; also: string[]; sessionKey: string }>, ops: StoreOp[]): Promise<string[]> {
    const seenAny = async (ids: string[]) => (await Promise.all(ids.map((id) => wasSeen(deps.store, id)))).some(Boolean);
    const seen = await Promise.all(taking.map((t) => (!t.inbound.messageId ? false : t.also.length ? seenAny([t.id, ...t.also]) : wasSeen(deps.store, t.id))));
    const fresh = new Map<string, { record: InboxRecord; also: string[] }>();
    const claimed = new Set<string>();
    taking.forEach(({ inbound, id, also, sessionKey }, i) => {
      if (seen[i] || [id, ...also].some((known) => claimed.has(known))) return deps.logger.info({ id }, "duplicate message dropped");
      [id, ...also].forEach((known) => claimed.add(known));
      fresh.set(id, { record: { id, sessionKey, channel, chatId: inbound.chatId, senderId: inbound.senderId, content: inbound.content, media: inbound.media ?? [], at: stamp() }, also });
    });
    const records = [...fresh.values()].map((f) => f.record);
    if (records.length || ops.length) await deps.store.batch([...[...fresh.values()].flatMap((f) => inboxPutOps(f.record, f.also)), ...ops], { sync: true });
    if (records.length) fault("after-inbox-write");
    for (const { id, sessionKey, chatId, senderId, content, media, at } of records) {
      deps.logger.info({ channel, sessionKey, messageId: id, chars: content.length, ...(media.length ? { media: media.length } : {}) }, "message received");
      deps.bus.publish({ type: "inbound", channel, chatId, senderId, content, messageId: id, media, sessionKey, at });
      deps.route(sessionKey, { id, channel, chatId, content, at, media });
    }
    return taking.map((t) => t.id);
  }

  return {
    acceptAll,
    /** Takes one message in; resolves with its id once it is routed. */
    accept: async (channel: string, inbound: ChannelInbound): Promise<string> => (await acceptAll(channel, [inbound]))[0]!,
  };
}
