import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { isAudio, type Transcriber } from "./transcription.js";

/**
 * Files posted to the control API with a message (`media`: each `{ name?, type?, data }`, data in
 * base64 or as a `data:` URL). They are saved under <data dir>/media/api and named in the message
 * as Telegram's are; audio is transcribed as on every channel.
 */

export const apiAttachmentSchema = lazySchema(() => z
  .object({
    name: z.string().min(1).max(200).optional(),
    /** MIME type; a data: URL's own type is used when this is missing. */
    type: z.string().min(1).max(100).optional(),
    data: z.string().min(1, "media data must not be empty"),
  })
  .strict());
export type ApiAttachment = z.infer<typeof apiAttachmentSchema>;

const EXT_BY_TYPE: Record<string, string> = {
  "audio/ogg": ".ogg",
  "audio/opus": ".opus",
  "audio/mpeg": ".mp3",
  "audio/mp3": ".mp3",
  "audio/mp4": ".m4a",
  "audio/m4a": ".m4a",
  "audio/x-m4a": ".m4a",
  "audio/aac": ".aac",
  "audio/wav": ".wav",
  "audio/x-wav": ".wav",
  "audio/webm": ".webm",
  "audio/flac": ".flac",
  "image/jpeg": ".jpg",
  "image/png": ".png",
  "image/gif": ".gif",
  "image/webp": ".webp",
  "application/pdf": ".pdf",
  "text/plain": ".txt",
};

export class AttachmentError extends Error {}

/** The bytes and MIME type of one attachment; a malformed one is an AttachmentError saying which. */
export function decodeAttachment(a: ApiAttachment, index: number): { bytes: Buffer; type?: string } {
  const dataUrl = /^data:([^;,]*)(;[^,]*)?,(.*)$/s.exec(a.data);
  if (dataUrl && !(dataUrl[2] ?? "").includes(";base64")) throw new AttachmentError(`media[${index}]: a data: URL must be base64 (data:<type>;base64,...)`);
  const base64 = (dataUrl ? (dataUrl[3] ?? "") : a.data).replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(base64) || base64.length === 0) throw new AttachmentError(`media[${index}]: data is not base64`);
  return { bytes: Buffer.from(base64, "base64"), type: a.type ?? (dataUrl?.[1] || undefined) };
}

/** Saves the attachments; returns the lines to add to the message and the saved paths. */
export async function takeAttachments(attachments: ApiAttachment[], mediaDir: string, transcriber?: Transcriber): Promise<{ lines: string[]; media: string[] }> {
  const decoded = attachments.map((a, i) => ({ ...decodeAttachment(a, i), name: a.name }));
  const dir = join(mediaDir, "api");
  await mkdir(dir, { recursive: true });
  const lines: string[] = [];
  const media: string[] = [];
  for (const { bytes, type, name } of decoded) {
    const named = name ? extname(name).toLowerCase() : "";
    const ext = (/^\.[a-z0-9]{1,10}$/.test(named) && named) || (type && EXT_BY_TYPE[type.toLowerCase()]) || ".bin";
    // Named by content: the same file posted again (a retried request) is the same file.
    const path = join(dir, `${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}${ext}`);
    await writeFile(path, bytes);
    media.push(path);
    if (isAudio(path, type)) {
      lines.push(`[audio${name ? ` ${name}` : ""}: ${path}]`);
      const text = await transcriber?.transcribe(path);
      if (text) lines.push(`[transcription: ${text}]`);
    } else {
      lines.push(`[${type?.startsWith("image/") ? "image" : `file${name ? ` ${name}` : ""}`}: ${path}]`);
    }
  }
  return { lines, media };
}
