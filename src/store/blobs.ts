import { createHash } from "node:crypto";
import { z } from "zod";
import { CorruptRecordError } from "../errors.js";
import type { Store, StoreOp } from "./store.js";

/**
 * Content-addressed text (the `blobs` sublevel, key: the sha256 of the text, base64url). A turn's
 * system prompt is stored as the list of its chunks' keys: the parts that repeat from turn to turn
 * (identity, bootstrap files, memory, skills, each undigested history entry) are written once, not
 * with every turn, so a turn's bytes do not grow with the prompt. A chunk is written in the same
 * synced batch as the first turn input that names it, and dropped by `sweepBlobs` only when no
 * stored turn input names it any more.
 */

const blobSchema = z.object({ text: z.string() });

export const blobHash = (text: string) => createHash("sha256").update(text).digest("base64url");

/**
 * The most recent prompts' chunks and their hashes, so a turn whose prompt repeats (nearly every
 * turn: identity, bootstrap files, memory and skills change rarely) neither splits nor hashes it
 * again. Bounded by the characters it holds (the oldest prompt goes first).
 */
const PROMPT_MEMO_CHARS = 4 * 1024 * 1024;
const promptMemo = new Map<string, { chunks: string[]; refs: string[] }>();
let promptMemoChars = 0;

/** A prompt's chunks and their keys (splitPrompt, blobHash), remembered for the prompts seen last. */
export function promptChunks(text: string): { chunks: string[]; refs: string[] } {
  const known = promptMemo.get(text);
  if (known) {
    promptMemo.delete(text);
    promptMemo.set(text, known);
    return known;
  }
  const chunks = splitPrompt(text);
  const entry = { chunks, refs: chunks.map(blobHash) };
  if (text.length > PROMPT_MEMO_CHARS) return entry;
  promptMemo.set(text, entry);
  promptMemoChars += text.length;
  for (const [old] of promptMemo) {
    if (promptMemoChars <= PROMPT_MEMO_CHARS) break;
    promptMemo.delete(old);
    promptMemoChars -= old.length;
  }
  return entry;
}

/**
 * The prompt cut into chunks that repeat across turns: before each section separator (`---` line)
 * and each undigested history entry (a line starting `- [`), so a new entry or one that falls off
 * changes one chunk, not the rest. Joining the chunks gives the text back exactly.
 */
export function splitPrompt(text: string): string[] {
  const chunks: string[] = [];
  let start = 0;
  const boundary = /\n(?=---\n|- \[)/g;
  for (let m = boundary.exec(text); m; m = boundary.exec(text)) {
    if (m.index + 1 > start) chunks.push(text.slice(start, m.index + 1));
    start = m.index + 1;
  }
  if (start < text.length || chunks.length === 0) chunks.push(text.slice(start));
  return chunks;
}

/**
 * What this process knows of a store's blobs, so a turn does not read or rewrite what is there.
 * `known`: read back or found present; `touched`: when a prepared input last named each blob (the
 * sweep spares recent ones: their input may not be committed yet); `doomed`: blobs a sweep is
 * deleting now, treated as absent (written again) until its batch is done.
 */
interface BlobState {
  known: Set<string>;
  touched: Map<string, number>;
  doomed: Set<string>;
  /** Reads of blobs under way: turns prepared at once wait for the same read (whether it is stored). */
  reading: Map<string, Promise<boolean>>;
}
const states = new WeakMap<Store, BlobState>();
const stateOf = (store: Store): BlobState => {
  let state = states.get(store);
  if (!state) states.set(store, (state = { known: new Set(), touched: new Map(), doomed: new Set(), reading: new Map() }));
  return state;
};

/**
 * A text as blob references, and the puts of the chunks not yet stored: the caller writes these
 * in the same synced batch as the record that names the references (a reader must always find them).
 */
export async function blobRefs(store: Store, text: string, now = Date.now()): Promise<{ refs: string[]; ops: StoreOp[] }> {
  const state = stateOf(store);
  const { chunks, refs } = promptChunks(text);
  // Touched before anything is decided: a sweep running now spares them.
  for (const ref of refs) state.touched.set(ref, now);
  const ops: StoreOp[] = [];
  const seen = new Set<string>();
  for (const [i, ref] of refs.entries()) {
    if (seen.has(ref)) continue;
    seen.add(ref);
    if (state.known.has(ref)) continue;
    if (!state.doomed.has(ref) && (await isStored(store, state, ref))) {
      // The sweep may have doomed it while we read: then it is written again.
      if (!state.doomed.has(ref)) {
        state.known.add(ref);
        continue;
      }
    }
    ops.push({ type: "put", sublevel: "blobs", key: ref, value: { text: chunks[i]! } });
  }
  // A copy: the remembered list is shared by every turn with this prompt.
  return { refs: [...refs], ops };
}

/** Whether a blob is stored, read once for all the turns that ask while the read is under way. */
function isStored(store: Store, state: BlobState, ref: string): Promise<boolean> {
  let read = state.reading.get(ref);
  if (!read) {
    read = store.get("blobs", ref, blobSchema).then((blob) => blob !== undefined);
    const forget = () => void state.reading.delete(ref);
    read.then(forget, forget);
    state.reading.set(ref, read);
  }
  return read;
}

/**
 * A batch carrying blob puts (a turn's first checkpoint) is durable: those blobs are stored, and the
 * turns after it need not read them back. One a sweep is deleting now stays unknown (written again).
 */
export function blobsWritten(store: Store, ops: readonly StoreOp[]): void {
  const state = states.get(store);
  if (!state) return;
  for (const op of ops) if (op.type === "put" && op.sublevel === "blobs" && !state.doomed.has(op.key)) state.known.add(op.key);
}

/** The text the references stand for; a missing chunk is a corrupt record, named with `what`. */
export async function readBlobs(store: Store, refs: string[], what: string): Promise<string> {
  const state = stateOf(store);
  const parts = await Promise.all(
    refs.map(async (ref) => {
      const blob = await store.get("blobs", ref, blobSchema);
      if (!blob) throw new CorruptRecordError(`${what} refers to stored text ${ref}, which is missing from the store`);
      if (!state.doomed.has(ref)) state.known.add(ref);
      return blob.text;
    }),
  );
  return parts.join("");
}

/** How long a blob named by a prepared input is spared by the sweep (its input may still be on its way to disk). */
export const BLOB_GRACE_MS = 10 * 60_000;

/**
 * Mark and sweep: deletes every blob that no stored turn input names (`referenced`, read after the
 * sweep starts) and that no input prepared in the last BLOB_GRACE_MS named. Returns how many went.
 */
export async function sweepBlobs(store: Store, referenced: () => Promise<Set<string>>, now = Date.now()): Promise<number> {
  const state = stateOf(store);
  const since = now - BLOB_GRACE_MS;
  for (const [ref, at] of state.touched) if (at < since) state.touched.delete(ref);
  const stored = (await store.list("blobs", z.unknown(), { onCorrupt: () => {} })).map((r) => r.key);
  const live = await referenced();
  // From here to the batch being issued nothing awaits: no input can name a blob in between unseen.
  const doomed = stored.filter((ref) => !live.has(ref) && !((state.touched.get(ref) ?? -Infinity) >= since));
  if (!doomed.length) return 0;
  for (const ref of doomed) {
    state.known.delete(ref);
    state.doomed.add(ref);
  }
  try {
    await store.batch(
      doomed.map((key): StoreOp => ({ type: "del", sublevel: "blobs", key })),
      { sync: true },
    );
  } finally {
    for (const ref of doomed) state.doomed.delete(ref);
  }
  return doomed.length;
}
