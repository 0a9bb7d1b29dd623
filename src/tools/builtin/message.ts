import { stat } from "node:fs/promises";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import type { Bus } from "../../bus/index.js";
import { isMediaUrl } from "../../channels/channel.js";
import { stripThink } from "../../providers/think.js";
import { queueDelivery, wasDelivered, type OutboxRecord } from "../../store/outbox.js";
import type { Store } from "../../store/store.js";
import { defineTool, ToolError } from "../contract.js";
import { resolveToolPath, type Sandbox } from "../sandbox.js";

export interface MessageToolOptions {
  store: Store;
  bus?: Bus;
  sandbox: Sandbox;
  /** Channels that can deliver (cli, api, telegram when enabled). */
  channels: () => string[];
  now?: () => number;
}

export function messageTool(opts: MessageToolOptions) {
  const now = opts.now ?? Date.now;
  return defineTool({
    name: "message",
    description:
      "Send a message to the user now, on the current chat or another channel/chat, optionally with files (media: workspace paths or http(s) URLs). " +
      "Use it for updates during long work or to reach another chat. Once it has written to the current chat, your final reply is not sent there again.",
    parameters: lazySchema(() => z.object({
      content: z.string().min(1),
      channel: z.string().optional().describe("Target channel (default: the current one)"),
      chat_id: z.string().optional().describe("Target chat (default: the current one)"),
      media: z.array(z.string()).optional().describe("Files to attach: workspace paths, or http(s) URLs passed on as they are"),
    })),
    // Keyed by the call's idempotency key: a repeat after a crash is the same delivery, never a second one.
    idempotent: true,
    async execute({ content: raw, channel, chat_id, media = [] }, ctx) {
      // Reasoning a model wrote inline is not for the user, here as in its replies.
      const content = stripThink(raw);
      if (content === "" && media.length === 0) throw new ToolError("the message is empty once its <think> reasoning is removed; write the text to send");
      const target = { channel: channel ?? ctx.channel, chatId: chat_id ?? (channel && channel !== ctx.channel ? undefined : ctx.chatId) };
      if (!target.channel || !target.chatId) throw new ToolError("no target chat: give channel and chat_id");
      const known = opts.channels();
      if (!known.includes(target.channel)) throw new ToolError(`unknown channel "${target.channel}"; available: ${known.join(", ")}`);
      const files: string[] = [];
      for (const path of media) {
        // A URL is passed through (nanobot's rule): the channel sends it by URL or shows it.
        if (isMediaUrl(path)) {
          files.push(path);
          continue;
        }
        const full = resolveToolPath(opts.sandbox, path, "read");
        if (!(await stat(full).catch(() => undefined))?.isFile()) throw new ToolError(`media file not found: ${path}`);
        files.push(full);
      }
      const deliveryId = ctx.idempotencyKey;
      const where = `${target.channel}:${target.chatId}`;
      if (await wasDelivered(opts.store, deliveryId)) return `Message already delivered to ${where}.`;
      const record: OutboxRecord = { deliveryId, channel: target.channel, chatId: target.chatId, content, media: files, answers: [], createdAt: now(), attempts: 0 };
      await queueDelivery(opts.store, opts.bus, record);
      return `Message queued for delivery to ${where}${files.length ? ` with ${files.length} file(s)` : ""}.`;
    },
  });
}
