import { readFile, stat } from "node:fs/promises";
import { extname } from "node:path";
import type { ChatMessage } from "../providers/messages.js";

const IMAGE_TYPES: Record<string, string> = { ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp" };
/** Larger images are left as paths: a data URL this big would swamp the request. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

export type ImagePart = { type: "image_url"; image_url: { url: string } };

/** The image type a file's first bytes say (PNG, JPEG, GIF, WebP), whatever its name says. */
export function sniffImageMime(bytes: Uint8Array): string | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 16));
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (b.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))) return "image/jpeg";
  const ascii = b.toString("latin1");
  if (ascii.startsWith("GIF87a") || ascii.startsWith("GIF89a")) return "image/gif";
  if (ascii.startsWith("RIFF") && ascii.slice(8, 12) === "WEBP") return "image/webp";
  return undefined;
}

export const imagePart = (mime: string, bytes: Uint8Array): ImagePart => ({
  type: "image_url",
  image_url: { url: `data:${mime};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}` },
});

/**
 * The user message a model sees, as nanobot builds it: the runtime-context block (`context`) and
 * then the text; with attached images, the block, every image as an image part (data URL) for
 * vision models, then the text. Other files stay as the paths named in the text.
 */
export async function userMessageWithMedia(text: string, media: string[] = [], context?: string): Promise<Extract<ChatMessage, { role: "user" }>> {
  const images: ImagePart[] = [];
  for (const path of media) {
    const type = IMAGE_TYPES[extname(path).toLowerCase()];
    const size = type ? (await stat(path).catch(() => undefined))?.size : undefined;
    if (!type || size === undefined || size > MAX_IMAGE_BYTES) continue;
    images.push(imagePart(type, await readFile(path)));
  }
  if (!images.length) return { role: "user", content: context ? `${context}\n\n${text}` : text };
  return { role: "user", content: [...(context ? [{ type: "text" as const, text: context }] : []), ...images, { type: "text", text }] };
}
