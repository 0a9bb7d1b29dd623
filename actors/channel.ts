import { fromPromise } from "xstate";
import type { Logger } from "pino";
import { concatMap, filter, map, Subject, type Subscription } from "rxjs";
import type { Bus } from "../src/bus/index.js";
import { DeliveryRejectedError, type Channel, type ChannelInbound } from "../src/channels/channel.js";
import { StoreUnavailableError } from "../src/store/health.js";
import { fault } from "../src/fault.js";
import { outboxDeliveredOps, outboxPutOp, outboxRejectedOps, pendingOutbox, withDeliveredPart, type OutboxRecord } from "../src/store/outbox.js";
import type { Store, StoreOp } from "../src/store/store.js";

export interface ChannelActorDeps {
  channels: Map<string, Channel>;
  store: Store;
  bus: Bus;
  /** Takes inbound messages into the system (with `ops`, in one synced batch) and routes them to their sessions. */
  accept(channel: string, messages: ChannelInbound[], ops?: StoreOp[]): Promise<void>;
  sendProgress: boolean;
  sendToolHints: boolean;
  logger?: Logger;
  now?: () => number;
  /** First retry delay (doubling after each failure); tests shorten it. */
  retryBaseMs?: number;
  /** Told when a channel has started (connected, or retrying its platform): daemon start waits for it. */
  onStarted?: (name: string) => void;
}

/** Wait before retry number `attempt` (1-based): doubling from 1 s, at most 5 minutes. */
export const retryDelay = (attempt: number, baseMs = 1_000) => Math.min(300_000, baseMs * 2 ** Math.max(0, attempt - 1));

/**
 * One channel for its whole life: started, then fed its outbox (what was pending at start first,
 * then what is announced), one delivery at a time. An entry is deleted only after the platform
 * accepted it; the parts of a message sent in several are recorded one by one as they are accepted. A failed delivery is retried with backoff; its attempt count and next deadline are
 * stored with it, so the timer survives a restart. A message the platform refuses for good is
 * dropped and marked failed. A fatal channel error fails the actor; the supervisor restarts it.
 */
export function createChannelActor(deps: ChannelActorDeps) {
  const now = deps.now ?? Date.now;
  /** Running channel actors, so that shutdown can wait for their deliveries before the store closes. */
  const lives = new Set<Promise<void>>();
  const logic = fromPromise<void, { name: string }>(({ input, signal }) => {
    const life = runChannel(input, signal);
    lives.add(life);
    void life.finally(() => lives.delete(life)).catch(() => undefined);
    return life;
  });
  return {
    logic,
    /** Resolves when every stopped channel actor has finished its in-flight delivery and stopped its channel. */
    drain: async () => void (await Promise.allSettled([...lives])),
  };

  /**
   * In order within a chat, chats side by side: each chat's deliveries chain on its last one, and a
   * chat leaves the map when its chain is done, so chats do not pile up. (An rxjs groupBy made a
   * group, a debounce timer and an inner subscription per chat: per reply, with a new chat each.)
   * Nothing queued starts once the channel stops (`stopped`).
   */
  function inOrderPerChat(track: (record: OutboxRecord) => Promise<void>) {
    const chains = new Map<string, Promise<void>>();
    let stopped = false;
    return {
      next(record: OutboxRecord) {
        const run = () => (stopped ? undefined : track(record));
        const previous = chains.get(record.chatId);
        const chain = (previous ? previous.then(run, run) : (run() ?? Promise.resolve())).catch(() => undefined);
        chains.set(record.chatId, chain);
        void chain.then(() => {
          if (chains.get(record.chatId) === chain) chains.delete(record.chatId);
        });
      },
      stop: () => void (stopped = true),
    };
  }

  async function runChannel(input: { name: string }, signal: AbortSignal): Promise<void> {
    const channel = deps.channels.get(input.name);
    if (!channel) throw new Error(`no channel named ${input.name}`);
    const log = deps.logger?.child({ channel: input.name });
    let fatal: ((err: Error) => void) | undefined;
    const failed = new Promise<never>((_, reject) => (fatal = reject));
    failed.catch(() => undefined);
    const timers = new Set<NodeJS.Timeout>();
    const busy = new Set<Promise<void>>();
    /** Everything to deliver, in order: the stored outbox first, then announcements and retries. */
    const queue = new Subject<OutboxRecord>();

    const later = (record: OutboxRecord, ms: number) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        queue.next(record);
      }, ms);
      timers.add(timer);
    };

    const deliver = async (record: OutboxRecord) => {
      if (signal.aborted) return;
      if (record.nextAttemptAt !== undefined && record.nextAttemptAt > now()) return later(record, record.nextAttemptAt - now());
      let current = record;
      // Each accepted part is recorded before the next is sent: a retry or a restart resends only what was not accepted.
      const onPartDelivered = async (index: number) => {
        fault("after-part-accepted");
        current = withDeliveredPart(current, index);
        await deps.store.batch([outboxPutOp(current)], { sync: true });
      };
      try {
        fault("during-delivery");
        // A store-backed channel's delivery commits with the outbox removal, in one synced batch.
        const delivered = channel.deliveryOps ? channel.deliveryOps(record) : (await channel.send(record, onPartDelivered), []);
        fault("before-outbox-delete");
        // Sent: a failing store must not make it a failed delivery (a retry would send it twice). The
        // record waits for the store; if troupe stops first, it is resent once at the next start, as after a crash.
        for (;;) {
          try {
            await deps.store.batch([...delivered, ...outboxDeliveredOps(record.deliveryId, now())], { sync: true });
            break;
          } catch (err) {
            if (!(err instanceof StoreUnavailableError)) throw err;
            await deps.store.health.writable(signal).catch(() => undefined);
            if (signal.aborted) return;
          }
        }
        return;
      } catch (err) {
        if (err instanceof DeliveryRejectedError) {
          log?.error({ err, deliveryId: record.deliveryId }, "the platform refused this message; dropped");
          await deps.store.batch(outboxRejectedOps(record.deliveryId, now(), err.message), { sync: true });
          return;
        }
        // The store, not the platform, failed (the API channel stores its replies; Telegram records
        // each accepted part): tried again as soon as the store takes writes, not counted as an attempt.
        if (err instanceof StoreUnavailableError) {
          log?.warn({ deliveryId: record.deliveryId, failure: err.failure }, "delivery waits for the store to take writes again");
          await deps.store.health.writable(signal).catch(() => undefined);
          if (!signal.aborted) queue.next(current);
          return;
        }
        const attempts = current.attempts + 1;
        const wait = retryDelay(attempts, deps.retryBaseMs);
        const next = { ...current, attempts, nextAttemptAt: now() + wait };
        log?.warn({ err, deliveryId: record.deliveryId, attempts, deliveredParts: next.deliveredParts, retryInMs: wait }, "delivery failed; will retry");
        await deps.store.batch([outboxPutOp(next)], { sync: true }).catch(() => undefined);
        later(next, wait);
      }
    };

    const subs: Subscription[] = [];
    // Subscribed before the stored outbox is read, so a reply stored in between is not missed; what is
    // announced before the read waits for it.
    let early: OutboxRecord[] | undefined = [];
    let stored = new Set<string>();
    // A record both read and announced is delivered once, from the stored copy (it carries attempts and delivered parts).
    const announced = (record: OutboxRecord) => {
      if (!stored.has(record.deliveryId)) queue.next(record);
    };
    subs.push(
      deps.bus
        .ofType("outbound")
        .pipe(
          filter((e) => e.channel === input.name),
          map((e): OutboxRecord => ({ deliveryId: e.deliveryId, channel: e.channel, chatId: e.chatId, content: e.content, media: e.media, replyTo: e.replyTo, answers: e.answers, createdAt: e.at, attempts: 0, ...(e.alreadySent ? { alreadySent: true } : {}) })),
        )
        .subscribe((record) => (early ? early.push(record) : announced(record))),
    );
    try {
      // A channel still connecting when the daemon stops is stopped (below), not waited for.
      const stopping = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      await Promise.race([channel.start((messages, ops) => deps.accept(input.name, messages, ops), (err) => fatal?.(err)), stopping]);
      if (signal.aborted) return;
      const pending = await pendingOutbox(deps.store, input.name);
      stored = new Set(pending.map((r) => r.deliveryId));
      const track = (record: OutboxRecord) => {
        const delivery = deliver(record);
        busy.add(delivery);
        return delivery.finally(() => busy.delete(delivery));
      };
      if (channel.parallelChats) {
        const perChat = inOrderPerChat(track);
        const sub = queue.subscribe((record) => perChat.next(record));
        sub.add(perChat.stop);
        subs.push(sub);
      } else subs.push(queue.pipe(concatMap(track)).subscribe());
      pending.forEach((r) => queue.next(r));
      const held = early;
      early = undefined;
      held.forEach(announced);
      if (channel.progress && (deps.sendProgress || deps.sendToolHints)) {
        const mine = `${input.name}:`;
        subs.push(
          deps.bus.ofType("progress", "thought", "tool_hint").subscribe((e) => {
            if (!e.sessionKey.startsWith(mine)) return;
            if (e.type === "tool_hint" ? deps.sendToolHints : deps.sendProgress) channel.progress?.(e);
          }),
        );
      }
      log?.info({ pending: pending.length }, "channel started");
      deps.onStarted?.(input.name);
      await Promise.race([failed, stopping]);
    } finally {
      subs.forEach((s) => s.unsubscribe());
      timers.forEach((t) => clearTimeout(t));
      await Promise.allSettled([...busy]);
      await channel.stop();
    }
  }
}
