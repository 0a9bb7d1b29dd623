import { fromPromise } from "xstate";
import type { Logger } from "pino";
import { filter, mergeMap, type Subscription } from "rxjs";
import type { Bus } from "../src/bus/index.js";
import type { Channel, ChannelInbound } from "../src/channels/channel.js";
import { fault } from "../src/fault.js";
import { outboxDeliveredOps, pendingOutbox, type OutboxRecord } from "../src/store/outbox.js";
import type { Store } from "../src/store/store.js";

export interface ChannelActorDeps {
  channels: Map<string, Channel>;
  store: Store;
  bus: Bus;
  /** Takes an inbound message into the system (routes it to its session). */
  accept(channel: string, message: ChannelInbound): Promise<void>;
  sendProgress: boolean;
  sendToolHints: boolean;
  logger?: Logger;
  now?: () => number;
  /** Delivery retries before an entry is left in the outbox for the next start. */
  retryDelaysMs?: number[];
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * One channel for its whole life: started, fed its outbox (what is pending from before first, then
 * what is announced), one delivery at a time. An entry is deleted only after the platform accepted
 * it; a failing one is retried with backoff and otherwise left for the next start. A fatal channel
 * error fails the actor, and the supervisor restarts it.
 */
export function createChannelActor(deps: ChannelActorDeps) {
  const now = deps.now ?? Date.now;
  const delays = deps.retryDelaysMs ?? [1_000, 2_000, 4_000];
  return fromPromise<void, { name: string }>(async ({ input, signal }) => {
    const channel = deps.channels.get(input.name);
    if (!channel) throw new Error(`no channel named ${input.name}`);
    const log = deps.logger?.child({ channel: input.name });
    let fatal: ((err: Error) => void) | undefined;
    const failed = new Promise<never>((_, reject) => (fatal = reject));
    failed.catch(() => undefined);

    const deliver = async (record: OutboxRecord) => {
      for (let attempt = 0; ; attempt++) {
        try {
          fault("during-delivery");
          await channel.send(record);
          fault("before-outbox-delete");
          await deps.store.batch(outboxDeliveredOps(record.deliveryId, now()), { sync: true });
          return;
        } catch (err) {
          const wait = delays[attempt];
          if (wait === undefined || signal.aborted) {
            log?.error({ err, deliveryId: record.deliveryId }, "delivery failed; it stays in the outbox for the next start");
            return;
          }
          log?.warn({ err, deliveryId: record.deliveryId, attempt: attempt + 1 }, "delivery failed; retrying");
          await sleep(wait, signal);
        }
      }
    };

    const subs: Subscription[] = [];
    await channel.start((m) => deps.accept(input.name, m), (err) => fatal?.(err));
    try {
      const seen = new Set<string>();
      const pending = await pendingOutbox(deps.store, input.name);
      pending.forEach((r) => seen.add(r.deliveryId));
      subs.push(
        deps.bus
          .ofType("outbound")
          .pipe(
            filter((e) => e.channel === input.name && !seen.has(e.deliveryId)),
            mergeMap(
              (e) => deliver({ deliveryId: e.deliveryId, channel: e.channel, chatId: e.chatId, content: e.content, media: e.media, replyTo: e.replyTo, answers: e.answers, createdAt: e.at }),
              1,
            ),
          )
          .subscribe(),
      );
      if (channel.progress && (deps.sendProgress || deps.sendToolHints)) {
        const mine = `${input.name}:`;
        subs.push(
          deps.bus.ofType("progress", "tool_hint").subscribe((e) => {
            if (!e.sessionKey.startsWith(mine)) return;
            if (e.type === "progress" ? deps.sendProgress : deps.sendToolHints) channel.progress?.(e);
          }),
        );
      }
      for (const record of pending) await deliver(record);
      log?.info({ redelivered: pending.length }, "channel started");
      await Promise.race([failed, new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }))]);
    } finally {
      subs.forEach((s) => s.unsubscribe());
      await channel.stop();
    }
  });
}
