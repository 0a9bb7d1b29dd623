import { Api, GrammyError } from "grammy";
import type { Logger } from "pino";
import { createActor, fromPromise } from "xstate";
import { z } from "zod";
import type { Bus } from "../src/bus/index.js";
import type { Channel, ChannelInbound, ChannelLink } from "../src/channels/channel.js";
import { DeliveryRejectedError, PermanentChannelError } from "../src/channels/channel.js";
import { splitMessage } from "../src/channels/telegram-format.js";
import { pollError, proxyAgent } from "../src/channels/telegram-net.js";
import { admit, readAllowFrom } from "../src/channels/telegram-update.js";
import { gatherAlbums } from "../src/channels/telegram-album.js";
import { telegramContent } from "../src/channels/telegram-content.js";
import { chatKeyOf, chatTarget } from "../src/channels/telegram-context.js";
import { takeInAnswer } from "../src/channels/telegram-intake.js";
import { telegramProgress } from "../src/channels/telegram-progress.js";
import { finishStream, sendMedia, sendPart, SPLIT_AT } from "../src/channels/telegram-send.js";
import type { Config } from "../src/config/schema.js";
import type { OutboxRecord } from "../src/store/outbox.js";
import type { Store } from "../src/store/store.js";
import { wasSeen } from "../src/store/inbox.js";
import { fault } from "../src/fault.js";
import { createRedactor } from "../src/log/redact.js";
import { telegramPollerMachine, type PollError } from "../machines/telegram.machine.js";
import type { Transcriber } from "../src/channels/transcription.js";


export interface TelegramDeps {
  config: Config["channels"]["telegram"];
  store: Store;
  bus: Bus;
  mediaDir: string;
  logger?: Logger;
  /** Voice notes and audio go through it (src/channels/transcription.ts); without it they stay files. */
  transcriber?: Transcriber;
  /** getUpdates long-poll seconds (tests shorten it). */
  pollTimeoutS?: number;
  /** How long past its long-poll window a getUpdates may hang before the watchdog gives it up. */
  watchdogGraceS?: number;
  baseBackoffMs?: number;
}

export const BOT_COMMANDS = [
  { command: "new", description: "Start a new conversation" },
  { command: "stop", description: "Stop the running turn" },
  { command: "status", description: "Show session status" },
  { command: "history", description: "Show recent conversation messages" },
  { command: "skill", description: "List enabled skills" },
  { command: "dream", description: "Run Dream memory consolidation now" },
  { command: "dream_log", description: "Show the latest Dream memory change" },
  { command: "dream_restore", description: "Restore Dream memory to an earlier version" },
  { command: "dream_prompt", description: "Tell Dream how to organize memory" },
  { command: "restart", description: "Restart the bot" },
  { command: "help", description: "Show the commands" },
];

const OFFSET_KEY = "telegram:offset";
const offsetSchema = z.object({ offset: z.number().int() });
const TYPING_EVERY_MS = 4_000;

/**
 * The Telegram channel: long polling driven by the poller machine, each getUpdates answer's messages
 * into the inbox in one synced batch with the offset past them (src/channels/telegram-intake.ts; an album as one
 * message, src/channels/telegram-album.ts), replies rendered as Telegram HTML (plain text if Telegram refuses the
 * HTML; src/channels/telegram-send.ts), split at 4,096 characters, a typing indicator while a turn runs, progress
 * and the streamed reply (src/channels/telegram-progress.ts).
 */
export function createTelegramChannel(deps: TelegramDeps): Channel {
  const cfg = deps.config;
  const agent = proxyAgent(cfg.proxy, cfg.apiRoot);
  const api = new Api(cfg.token, { apiRoot: cfg.apiRoot, ...(agent ? { baseFetchConfig: { agent } as never } : {}) });

  const log = deps.logger?.child({ channel: "telegram" });
  const allowFrom = readAllowFrom(cfg.allowFrom);
  if (allowFrom.unusable.length) log?.warn({ entries: allowFrom.unusable }, "channels.telegram.allowFrom: these entries name no one (expected an id, a username, id|username or *); ignored");
  let me: { id: number; username: string } | undefined;
  let poller: ReturnType<typeof createActor<typeof telegramPollerMachine>> | undefined;
  const typing = new Map<string, NodeJS.Timeout>();
  const { streams, progress } = telegramProgress({ api, cfg, log });
  const subs: Array<{ unsubscribe(): void }> = [];
  const redact = createRedactor([cfg.token]);
  let link: ChannelLink = { state: "connecting", since: Date.now(), error: null, failures: 0 };

  const { contentOf, carriesMedia } = telegramContent({ api, apiRoot: cfg.apiRoot, token: cfg.token, agent, mediaDir: deps.mediaDir, transcriber: deps.transcriber, log });

  /**
   * Reads one update: the message to take in (its media downloaded), or none when it is dropped
   * (with a log line); with its update_id (undefined if it has none).
   */
  async function read(update: unknown): Promise<{ updateId?: number; message?: ChannelInbound }> {
    const admitted = admit(update, { allowFrom, groupPolicy: cfg.groupPolicy, bot: me });
    if (!admitted.ok) {
      const fields = { updateId: admitted.updateId, ...admitted.detail };
      if (admitted.why === "malformed") log?.warn(fields, "telegram update dropped: malformed");
      else if (admitted.why === "sender not allowed") log?.info(fields, "message from a sender not in channels.telegram.allowFrom; ignored");
      else if (admitted.why === "not addressed") log?.debug(fields, "group message not addressed to the bot; ignored");
      else log?.info(fields, `telegram update dropped: ${admitted.why}`);
      return { updateId: admitted.updateId };
    }
    const m = admitted.message;
    const { content, media } = await contentOf(admitted.text !== undefined ? { ...m, text: admitted.text } : m, me?.id);
    // Telegram's command names cannot hold a hyphen: /dream_log, /dream_restore and /dream_prompt are nanobot's aliases.
    const text = content.replace(/^\/start\b/, "/help").replace(/^\/dream_(log|restore|prompt)\b/, "/dream-$1").replace(new RegExp(`^(/\\w+)@${me?.username ?? "\\w+"}`), "$1");
    return {
      updateId: admitted.updateId,
      // A forum topic's messages are a chat of their own (chatKeyOf), answered in their topic.
      message: { chatId: chatKeyOf(m), senderId: admitted.senderId, content: text, messageId: `${m.chat.id}:${m.message_id}`, media },
    };
  }

  /**
   * nanobot's acknowledgement: channels.telegram.reactEmoji on a message once it is in the inbox, taken
   * back once its reply is delivered. Best effort: a chat where reactions are off, or an emoji
   * Telegram does not offer as a reaction, costs a debug line.
   */
  function react(chatId: string, messageId: number, on: boolean) {
    if (!cfg.reactEmoji) return;
    void api
      .setMessageReaction(chatTarget(chatId).chat, messageId, on ? [{ type: "emoji", emoji: cfg.reactEmoji as never }] : [])
      .catch((err: unknown) => log?.debug({ err, chatId, messageId }, "telegram reaction not set"));
  }
  /** Its reply delivered: the reactions on the Telegram messages of its chat it answers are taken back. */
  const answered = (record: OutboxRecord) => {
    for (const id of record.answers) {
      const [, chat, message] = /^telegram:(-?\d+):(\d+)$/.exec(id) ?? [];
      if (chat === chatTarget(record.chatId).chat) react(chat, Number(message), false);
    }
  };

  const stopTyping = (chatId: string) => {
    clearInterval(typing.get(chatId));
    typing.delete(chatId);
  };

  return {
    name: "telegram",
    async start(accept, fail) {
      const connect = fromPromise<void, void>(async () => {
        try {
          const bot = await api.getMe();
          me = { id: bot.id, username: bot.username };
          await api.setMyCommands(BOT_COMMANDS);
          log?.info({ bot: bot.username }, "telegram connected");
        } catch (err) {
          throw pollError(err);
        }
      });
      const poll = fromPromise<number, void>(async ({ signal }) => {
        const timeout = deps.pollTimeoutS ?? 25;
        // The watchdog: a poll that outlives its long-poll window by the grace is given up and retried.
        const stalled = AbortSignal.timeout((timeout + (deps.watchdogGraceS ?? 15)) * 1000);
        const watchdog = AbortSignal.any([signal, stalled]);
        let fetched = false;
        try {
          const stored = await deps.store.get("meta", OFFSET_KEY, offsetSchema);
          const getUpdates = (wait: number) => api.getUpdates({ offset: stored?.offset, timeout: wait, allowed_updates: ["message"] }, watchdog as Parameters<Api["getUpdates"]>[1]);
          const first = await getUpdates(timeout);
          fetched = true;
          if (first.length) fault("after-updates-fetched");
          // An album's items still on their way are asked for again from the same offset (nothing acknowledged yet).
          const updates = await gatherAlbums(first as unknown[], () => getUpdates(0), signal, (err) => log?.warn({ err }, "getUpdates for the rest of an album failed; taking what came"));
          // Read as unknown: each update is parsed by read(), and one that does not parse is dropped, not thrown on.
          await takeInAnswer(updates, stored?.offset, {
            read,
            carriesMedia,
            accept: async (messages, ops) => {
              await accept(messages, ops);
              for (const m of messages) react(m.chatId, Number(m.messageId!.split(":").at(-1)), true);
            },
            offsetOp: (offset) => ({ type: "put", sublevel: "meta", key: OFFSET_KEY, value: { offset } }),
            storeOffset: (offset) => deps.store.batch([{ type: "put", sublevel: "meta", key: OFFSET_KEY, value: { offset } }], { sync: true }),
            taken: async (update) => {
              const m = (update as { message?: { chat?: { id?: unknown }; message_id?: unknown } }).message;
              return typeof m?.chat?.id === "number" && typeof m.message_id === "number" && wasSeen(deps.store, `telegram:${m.chat.id}:${m.message_id}`);
            },
          });
          return updates.length;
        } catch (err) {
          if (signal.aborted) throw err;
          // The watchdog explains only a getUpdates that did not answer: reading a long answer's media may outlive it.
          if (!fetched && stalled.aborted) throw { message: `getUpdates stalled for over ${timeout + (deps.watchdogGraceS ?? 15)} s; restarting the poll` } satisfies PollError;
          throw pollError(err);
        }
      });
      poller = createActor(telegramPollerMachine.provide({ actors: { connect, poll } }), { input: { baseBackoffMs: deps.baseBackoffMs } });
      link = { state: "connecting", since: Date.now(), error: null, failures: 0 };
      // Failing from the first failure until a poll succeeds (the machine counts them so): a reconnect that fails again goes on with it.
      let failingSince: number | undefined;
      poller.subscribe((snap) => {
        const { failures, lastError } = snap.context;
        if (failures === 0) failingSince = undefined;
        else failingSince ??= Date.now();
        if (snap.value === "polling") {
          if (link.state !== "connected") link = { state: "connected", since: Date.now(), error: null, failures };
        } else if (failingSince !== undefined) {
          link = { state: "backing_off", since: failingSince, error: redact(lastError ?? "unknown error"), failures };
        }
        if (snap.value === "backing_off") log?.warn({ error: snap.context.lastError, failures: snap.context.failures }, "telegram polling failed; backing off");
        if (snap.status === "done") fail(new PermanentChannelError(snap.context.fatal ?? "telegram poller stopped"));
      });
      poller.start();
      // Started means connected (or retrying a network failure); a rejected token fails the start itself.
      await new Promise<void>((resolve, reject) => {
        const sub = poller!.subscribe({
          next: (snap) => {
            if (snap.status === "done") reject(new PermanentChannelError(snap.context.fatal ?? "telegram poller stopped"));
            else if (snap.value === "connecting") return;
            else resolve();
            sub.unsubscribe();
          },
          complete: () => resolve(),
        });
      });
      subs.push(
        deps.bus.ofType("turn_state").subscribe((e) => {
          if (!e.sessionKey.startsWith("telegram:")) return;
          const chatId = e.sessionKey.slice("telegram:".length);
          if (["responded", "failed", "cancelled", "max_iterations"].includes(e.state)) return stopTyping(chatId);
          if (typing.has(chatId)) return;
          const { chat, thread } = chatTarget(chatId);
          const tick = () => void api.sendChatAction(chat, "typing", thread).catch(() => undefined);
          tick();
          typing.set(chatId, setInterval(tick, TYPING_EVERY_MS));
        }),
      );
    },
    async stop() {
      poller?.stop();
      subs.forEach((s) => s.unsubscribe());
      [...typing.keys()].forEach(stopTyping);
    },
    async send(record: OutboxRecord, onPartDelivered) {
      // The message tool sent the answer already (nanobot's _sent_in_turn): nothing more to show.
      if (record.alreadySent) return answered(record);
      // Only its turn's reply takes a draft over (not a command's answer sent meanwhile).
      const draft = streams.get(record.chatId);
      const stream = record.answers.length && draft && record.deliveryId === `reply:${draft.turnId}` ? draft : undefined;
      let streamed = false;
      if (stream) {
        // The streamed message becomes the reply: its final text replaces the draft.
        streams.delete(record.chatId);
        clearTimeout(stream.timer);
        await stream.busy;
        streamed = stream.messageId !== undefined && (await finishStream(api, record.chatId, stream.messageId, record.content));
      }
      const replyTo = cfg.replyToMessage ? Number(/^telegram:-?\d+:(\d+)$/.exec(record.answers[0] ?? "")?.[1]) || undefined : undefined;
      // The parts, numbered alike on every attempt (the split depends on the text alone): the text's pieces, then the files.
      const text = record.content.trim() ? splitMessage(record.content, SPLIT_AT) : [];
      const parts: Array<() => Promise<unknown>> = [
        ...text.map((part, i) => () => sendPart(api, record.chatId, part, i === 0 ? replyTo : undefined)),
        ...record.media.map((media) => () => sendMedia(api, record.chatId, media)),
      ];
      const done = new Set(record.deliveredParts);
      // The text is in the edited draft: its parts are recorded as delivered, so a restart before the
      // record is gone does not send the reply again; the files still go after it.
      if (streamed) {
        for (const i of text.keys()) if (!done.has(i)) await onPartDelivered(i);
        text.forEach((_, i) => done.add(i));
      }
      try {
        for (const [i, sendIt] of parts.entries()) {
          if (done.has(i)) continue;
          await sendIt();
          await onPartDelivered(i);
        }
        answered(record);
      } catch (err) {
        if (err instanceof GrammyError && (err.error_code === 403 || (err.error_code === 400 && /chat not found|user is deactivated|bot was blocked/i.test(err.description)))) {
          throw new DeliveryRejectedError(`Telegram refused the message: ${err.description}`);
        }
        throw err;
      }
    },
    link: () => link,
    progress,
  };
}
