import type { ImagePart } from "../context/media.js";
import type { ChatMessage } from "../providers/messages.js";
import type { Tool } from "./contract.js";

/** Images a request carries from tool results; the newest are kept. */
export const MAX_TOOL_IMAGES = 8;
/** Bytes of image data (base64) a request carries from tool results. */
export const MAX_TOOL_IMAGE_CHARS = 24 * 1024 * 1024;

type UserMessage = Extract<ChatMessage, { role: "user" }>;
type Part = Exclude<UserMessage["content"], string>[number];

/** Where the running turn starts when it is not told: after the last final answer (an assistant message without tool calls). */
function turnStart(messages: ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant" && !m.tool_calls?.length) return i + 1;
  }
  return 0;
}

/**
 * The request a model is sent, with the images the running turn's tool results stand for (read_file
 * on a PNG) as image parts. Tool messages can only hold text for most OpenAI-compatible servers, so
 * the images follow each run of tool results in a user message (merged into a user message already
 * there). Results stay text in the checkpoint; the files are read again here, within the caps.
 */
export async function attachToolImages(messages: ChatMessage[], toolOf: (name: string) => Tool | undefined, turnMessages?: number): Promise<ChatMessage[]> {
  // Told how many messages the turn added, the rest is history: a cut-off answer (an assistant message
  // without tool calls) within the turn does not hide its earlier images, nor does a failed turn with
  // no final answer lend the next one its images.
  const start = turnMessages === undefined ? turnStart(messages) : Math.max(0, messages.length - turnMessages);
  const found: Array<{ index: number; name: string; part: ImagePart }> = [];
  for (let i = start; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== "tool" || !m.name) continue;
    const tool = toolOf(m.name);
    if (!tool?.imageOf) continue;
    const part = await tool.imageOf(m.content);
    if (part) found.push({ index: i, name: m.name, part });
  }
  if (found.length === 0) return messages;
  // Newest first within the caps; older ones are named in text only.
  const kept = new Set<number>();
  let chars = 0;
  for (let k = found.length - 1; k >= 0 && kept.size < MAX_TOOL_IMAGES; k--) {
    const size = found[k]!.part.image_url.url.length;
    if (chars + size > MAX_TOOL_IMAGE_CHARS) continue;
    chars += size;
    kept.add(k);
  }
  const after = new Map<number, { images: ImagePart[]; labels: string[] }>();
  found.forEach((f, k) => {
    // The images go after the last tool message of the run this result is in.
    let end = f.index;
    while (messages[end + 1]?.role === "tool") end++;
    const entry = after.get(end) ?? { images: [], labels: [] };
    const call = (messages[f.index] as { tool_call_id: string }).tool_call_id;
    if (kept.has(k)) {
      entry.images.push(f.part);
      entry.labels.push(`[Image ${entry.images.length} above: the ${f.name} result of call ${call}]`);
    } else {
      entry.labels.push(`[The image from ${f.name} call ${call} is left out: over the cap of ${MAX_TOOL_IMAGES} images or their size in one request]`);
    }
    after.set(end, entry);
  });
  // Images before their text, as in a user's own message with pictures.
  const partsOf = (e: { images: ImagePart[]; labels: string[] }): Part[] => [...e.images, { type: "text", text: e.labels.join("\n") }];
  const out: ChatMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const entry = after.get(i - 1);
    if (entry && m.role === "user") {
      out.push({ role: "user", content: [...partsOf(entry), ...(typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : m.content)] });
      continue;
    }
    if (entry) out.push({ role: "user", content: partsOf(entry) });
    out.push(m);
  }
  const tail = after.get(messages.length - 1);
  if (tail) out.push({ role: "user", content: partsOf(tail) });
  return out;
}

const NOT_DELIVERED = "[Image not delivered to model — do not describe or reference it]";

const hasImages = (messages: ChatMessage[]) => messages.some((m) => m.role === "user" && Array.isArray(m.content) && m.content.some((p) => p.type === "image_url"));

/** The request with every image part replaced by a note, for a model that takes text only. */
export function withoutImages(messages: ChatMessage[]): ChatMessage[] {
  return messages.map((m) =>
    m.role === "user" && Array.isArray(m.content)
      ? { ...m, content: m.content.map((p): Part => (p.type === "image_url" ? { type: "text", text: NOT_DELIVERED } : p)) }
      : m,
  );
}

/** The server refused the request itself (a 4xx other than auth, timeout or rate limit): what a model without vision answers to an image. */
function refusedRequest(err: unknown): boolean {
  const status = (err as { cause?: { status?: unknown } })?.cause?.status;
  return typeof status === "number" && status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

/**
 * One model call; when a request with images is refused, once more with the images replaced by a
 * note (as nanobot does), so a text-only model still answers instead of failing the turn.
 */
export async function chatWithImageFallback<T>(chat: (messages: ChatMessage[]) => Promise<T>, messages: ChatMessage[], signal?: AbortSignal): Promise<T> {
  try {
    return await chat(messages);
  } catch (err) {
    if (signal?.aborted || !hasImages(messages) || !refusedRequest(err)) throw err;
    return chat(withoutImages(messages));
  }
}
