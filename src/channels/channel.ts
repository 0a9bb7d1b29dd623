import type { StoreOp } from "../store/store.js";
import type { EventOf } from "../bus/events.js";
import type { OutboxRecord } from "../store/outbox.js";

/** A message as a channel receives it from its platform. */
export interface ChannelInbound {
  chatId: string;
  senderId: string;
  content: string;
  /** The platform's message id (dedupes redeliveries). */
  messageId?: string;
  /** Further platform ids this one message stands for (a Telegram album's later items): a redelivery of any is a duplicate too. */
  otherMessageIds?: string[];
  media?: string[];
  /** Overrides the default session key `channel:chatId`. */
  sessionKey?: string;
}

/**
 * Takes messages in: resolves once all of them are in the inbox, written with `ops` (the channel's
 * own state, such as a poll offset) in one synced batch, so that either all of it is stored or
 * none. A message already taken (same messageId) is not taken again.
 */
export type AcceptMessages = (messages: ChannelInbound[], ops?: StoreOp[]) => Promise<void>;

export type ProgressUpdate = EventOf<"progress"> | EventOf<"tool_hint"> | EventOf<"thought">;

/**
 * What a channel (cli, api, telegram) implements. The channel actor starts it, hands it the
 * outbox entries for its name, records each part send() reports, and deletes an entry only after
 * send() resolved.
 */
export interface Channel {
  readonly name: string;
  /** Starts receiving. `accept` resolves once the messages are safely taken; `fail` reports a fatal error (the supervisor restarts the channel). */
  start(accept: AcceptMessages, fail: (err: Error) => void): Promise<void>;
  stop(): Promise<void>;
  /**
   * Delivers one message; resolves once the platform accepted it. A channel that sends a message in
   * parts numbers them the same way on every attempt, skips those in `message.deliveredParts`, and
   * awaits `onPartDelivered(index)` after the platform accepted each (it records the part, synced).
   */
  send(message: OutboxRecord, onPartDelivered: (index: number) => Promise<void>): Promise<void>;
  /**
   * A channel that delivers into the store (the API's mailbox) gives the ops instead of writing
   * them: they commit in the same synced batch that clears the outbox entry, one batch per reply.
   */
  deliveryOps?(message: OutboxRecord): StoreOp[];
  /** Delivers to its chats side by side (one message at a time per chat, in order); default: one message at a time. */
  readonly parallelChats?: boolean;
  /** How its link to the platform is, for a channel that connects to one; what daemon status and the actor tree show of it. */
  link?(): ChannelLink;
  /** Streamed text and tool hints of its sessions, when channels.sendProgress / sendToolHints allow. */
  progress?(update: ProgressUpdate): void;
}

/**
 * A channel's link to its platform, for one that can tell (Telegram's poller): connecting (its first
 * attempt), connected, or backing off after failures, with the last error (redacted) and `since` the
 * first failure of the stretch (it stays while attempts keep failing, and ends with a success).
 */
export interface ChannelLink {
  state: "connecting" | "connected" | "backing_off";
  since: number;
  error: string | null;
  failures: number;
}

/** Thrown by send() when the platform refused a message for good: retrying would not help. */
export class DeliveryRejectedError extends Error {}

/** A channel failure that restarting cannot fix (a rejected token): the supervisor marks the channel failed at once. */
export class PermanentChannelError extends Error {
  readonly permanent = true;
}

/**
 * A media entry that is an http(s) URL, not a file: the message tool passes such URLs through as
 * nanobot does, and a channel sends them by URL (Telegram fetches them itself) or shows them.
 */
export const isMediaUrl = (media: string) => /^https?:\/\//i.test(media);
