import type { StoreOp } from "../store/store.js";
import type { AcceptMessages, ChannelInbound } from "./channel.js";
import { albumOf, mergeAlbum, unitsOf, updateIdOf } from "./telegram-album.js";

export interface IntakeDeps {
  /** Reads one update: the message to take in (media downloaded), or none when it is dropped. */
  read(update: unknown): Promise<{ updateId?: number; message?: ChannelInbound }>;
  /** Whether reading the update waits on the network (a file to download, a voice note to transcribe). */
  carriesMedia(update: unknown): boolean;
  /** Takes messages in with the offset, in one synced write. */
  accept: AcceptMessages;
  /** Stores the offset alone (synced), when no message goes with it. */
  storeOffset(offset: number): Promise<void>;
  /** The op that stores the offset, written with the messages. */
  offsetOp(offset: number): StoreOp;
  /** Whether an update's message was taken in already (an album item stored before its album was redelivered with more). */
  taken(update: unknown): Promise<boolean>;
}

/**
 * Takes one getUpdates answer in: its messages into the inbox with the offset past them in one
 * synced write (a busy bot pays one fsync per getUpdates, not two per update); the offset never
 * moves past an update not stored. A crash or a failed write stores none of a write's messages, and
 * Telegram hands them out again. An update whose reading waits on the network is read only once
 * what came before it is in, and is taken in on its own once read: a text message does not wait on
 * another chat's media, and a failed write reads no media again that an earlier write stored. An
 * album's items are read together, at the place of its last item, and taken in as one message.
 */
export async function takeInAnswer(updates: unknown[], storedOffset: number | undefined, deps: IntakeDeps): Promise<void> {
  const ids = updates.map(updateIdOf).filter((id) => id !== undefined);
  const done = new Set<number>();
  let pending: ChannelInbound[] = [];
  let written = storedOffset;
  /** Past every update read, but not past one still to read (an album's earlier items, read with its last). */
  const offset = () => {
    const unread = ids.filter((id) => !done.has(id));
    return unread.length ? Math.min(...unread) : done.size ? Math.max(...done) + 1 : undefined;
  };
  const takeIn = async () => {
    const next = offset();
    const messages = pending;
    pending = [];
    const moves = next !== undefined && next !== written && (written === undefined || next > written);
    if (messages.length) await deps.accept(messages, moves ? [deps.offsetOp(next)] : []);
    else if (moves) await deps.storeOffset(next);
    if (moves) written = next;
  };
  for (const unit of unitsOf(updates)) {
    const fetches = unit.some((u) => deps.carriesMedia(u));
    if (fetches && pending.length) await takeIn();
    // An album's items are read at once (their files downloaded side by side), then kept in order.
    const results = await Promise.all(
      unit.map(async (update) => {
        // An album redelivered with an item more (a write or a download failed between): the items
        // stored before are left out, so the new one is taken in on its own, not dropped with them.
        if (albumOf(update) !== undefined && (await deps.taken(update))) return { updateId: updateIdOf(update) };
        return deps.read(update);
      }),
    );
    const read: ChannelInbound[] = [];
    for (const { updateId, message } of results) {
      if (message) read.push(message);
      if (updateId !== undefined) done.add(updateId);
    }
    const message = mergeAlbum(read);
    if (message) pending.push(message);
    if (fetches) await takeIn();
  }
  await takeIn();
}
