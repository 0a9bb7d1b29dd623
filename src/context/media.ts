import { readFile, stat } from "node:fs/promises";
import { extname } from "node:path";
import type { ChatMessage } from "../providers/messages.js";

const IMAGE_TYPES: Record<string, string> = { ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp" };
/** Larger images are left as paths: a data URL this big would swamp the request. */
const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/**
 * The user message a model sees, as nanobot builds it: the runtime-context block (`context`) and
 * then the text; with attached images, the block, every image as an image part (data URL) for
 * vision models, then the text. Other files stay as the paths named in the text.
 */
export async function userMessageWithMedia(text: string, media: string[] = [], context?: string): Promise<Extract<ChatMessage, { role: "user" }>> {
  const images: Array<{ type: "image_url"; image_url: { url: string } }> = [];
  for (const path of media) {
    const type = IMAGE_TYPES[extname(path).toLowerCase()];
    const size = type ? (await stat(path).catch(() => undefined))?.size : undefined;
    if (!type || size === undefined || size > MAX_IMAGE_BYTES) continue;
    images.push({ type: "image_url", image_url: { url: `data:${type};base64,${(await readFile(path)).toString("base64")}` } });
  }
  if (!images.length) return { role: "user", content: context ? `${context}\n\n${text}` : text };
  return { role: "user", content: [...(context ? [{ type: "text" as const, text: context }] : []), ...images, { type: "text", text }] };
}
