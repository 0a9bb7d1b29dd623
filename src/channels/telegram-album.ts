import { setTimeout as sleep } from "node:timers/promises";
import type { ChannelInbound } from "./channel.js";

/**
 * Telegram albums (media groups): photos or files sent together come as one update each, with the
 * same media_group_id and the caption usually on one of them, and Telegram often splits them across
 * two getUpdates answers. As nanobot does (it buffers an album 0.6 s), troupe takes an album in as one
 * message, so one turn sees every photo and the user gets one answer.
 */

/** How long to wait for the rest of an album once an answer holds some of it (nanobot's 0.6 s). */
export const ALBUM_WAIT_MS = 600;

interface Loose {
  update_id?: unknown;
  message?: { chat?: { id?: unknown } | null; media_group_id?: unknown } | null;
}

/** An update's id when it has a usable one (admit() drops an update without). */
export function updateIdOf(update: unknown): number | undefined {
  const id = (update as Loose | null)?.update_id;
  return typeof id === "number" && Number.isSafeInteger(id) ? id : undefined;
}

/** The album an update's message belongs to (`chat:media_group_id`), read leniently: a malformed update is in none. */
export function albumOf(update: unknown): string | undefined {
  const m = (update as Loose | null)?.message;
  if (typeof m !== "object" || m === null) return undefined;
  const chat = m.chat?.id;
  const group = m.media_group_id;
  return typeof group === "string" && group !== "" && typeof chat === "number" && Number.isSafeInteger(chat) ? `${chat}:${group}` : undefined;
}

/**
 * When an answer holds an album's items: waits ALBUM_WAIT_MS, asks again from the same offset (so
 * nothing is acknowledged to Telegram that is not stored) and joins the two answers (see
 * joinAnswers). A failed second ask keeps the first answer (the album may then come in two messages,
 * nothing is lost); stopping (`signal`) still throws.
 */
export async function gatherAlbums(first: unknown[], askAgain: () => Promise<unknown[]>, signal: AbortSignal, onError?: (err: unknown) => void): Promise<unknown[]> {
  if (!first.some((u) => albumOf(u) !== undefined)) return first;
  await sleep(ALBUM_WAIT_MS, undefined, { signal });
  let second: unknown[];
  try {
    second = await askAgain();
  } catch (err) {
    if (signal.aborted) throw err;
    onError?.(err);
    return first;
  }
  return joinAnswers(first, second);
}

/**
 * The first answer, then what the second holds past it (by update_id), up to the first item of an
 * album the first answer did not hold: that album and what follows it are left to the next poll
 * (the offset stays before them), which gives that album a wait of its own.
 */
export function joinAnswers(first: unknown[], second: unknown[]): unknown[] {
  const known = new Set(first.map(updateIdOf).filter((id) => id !== undefined));
  const albums = new Set(first.map(albumOf).filter((a) => a !== undefined));
  const joined = [...first];
  for (const update of second) {
    const id = updateIdOf(update);
    if (id === undefined || known.has(id)) continue;
    const album = albumOf(update);
    if (album !== undefined && !albums.has(album)) break;
    known.add(id);
    joined.push(update);
  }
  return joined;
}

/**
 * The order an answer is read in: each update on its own, except an album's items, which are read
 * together at the place of the album's last item (what came before it in the answer is read first).
 */
export function unitsOf(updates: unknown[]): unknown[][] {
  const lastAt = new Map<string, number>();
  updates.forEach((u, i) => {
    const album = albumOf(u);
    if (album !== undefined) lastAt.set(album, i);
  });
  const items = new Map<string, unknown[]>();
  const units: unknown[][] = [];
  updates.forEach((u, i) => {
    const album = albumOf(u);
    if (album === undefined) return void units.push([u]);
    const group = items.get(album) ?? [];
    items.set(album, group);
    group.push(u);
    if (lastAt.get(album) === i) units.push(group);
  });
  return units;
}

/**
 * An album's messages (those admitted: allowFrom and the group rules apply to each item) as one:
 * their texts joined by newlines, every file once, in order, the first message's id and sender; the
 * others' ids go along so that a redelivery of any of them is recognised.
 */
export function mergeAlbum(messages: ChannelInbound[]): ChannelInbound | undefined {
  const [first, ...rest] = messages;
  if (!first || rest.length === 0) return first;
  return {
    ...first,
    content: messages
      .map((m) => m.content)
      .filter(Boolean)
      .join("\n"),
    media: [...new Set(messages.flatMap((m) => m.media ?? []))],
    otherMessageIds: rest.flatMap((m) => (m.messageId ? [m.messageId] : [])),
  };
}
