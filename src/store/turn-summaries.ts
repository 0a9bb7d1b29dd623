import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { KEY_END } from "../session-key.js";
import type { ListOptions, Store, StoreOp } from "./store.js";
import type { TurnRecord } from "./turns.js";

/**
 * Each session's turn summary, so `sessions list` reads one small record per session instead of
 * every turn record ever written: the newest turn's state (written with its first checkpoint and
 * its final one; while the turn is open its record says where it stands, see sessionsOverview)
 * and one marker per turn that was resumed after troupe stopped mid-turn.
 */
const lastTurnKey = (sessionKey: string) => `lastturn:${sessionKey}`;
const resumedPrefix = (sessionKey: string) => `resumed:${sessionKey}${KEY_END}`;
export const lastTurnSchema = lazySchema(() => z.object({ sessionKey: z.string(), turnId: z.string(), state: z.string(), createdAt: z.number() }));
const resumedSchema = lazySchema(() => z.object({ sessionKey: z.string(), turnId: z.string() }));

/**
 * A checkpoint's summary ops. `first: false` (a checkpoint after the turn's first, not its final
 * one): the newest-turn record is not rewritten, it already names this turn (an op and a record
 * encoded less for each of a turn's middle checkpoints).
 */
export function turnSummaryOps(record: Pick<TurnRecord, "sessionKey" | "turnId" | "state" | "createdAt" | "resumes"> & { final?: boolean }, opts: { first?: boolean } = {}): StoreOp[] {
  const { sessionKey, turnId, state, createdAt } = record;
  const ops: StoreOp[] = [];
  if (opts.first !== false || record.final) ops.push({ type: "put", sublevel: "meta", key: lastTurnKey(sessionKey), value: { sessionKey, turnId, state, createdAt } });
  if (record.resumes > 0) ops.push({ type: "put", sublevel: "meta", key: `${resumedPrefix(sessionKey)}${turnId}`, value: { sessionKey, turnId } });
  return ops;
}

/** Every session's newest turn and how many of its turns were resumed. */
export async function turnSummaries(store: Store, opts: ListOptions = {}): Promise<{ last: Map<string, z.infer<typeof lastTurnSchema>>; resumed: Map<string, number> }> {
  const last = new Map((await store.list("meta", lastTurnSchema, { prefix: "lastturn:", ...opts })).map((r) => [r.value.sessionKey, r.value] as const));
  const resumed = new Map<string, number>();
  for (const r of await store.list("meta", resumedSchema, { prefix: "resumed:", ...opts })) resumed.set(r.value.sessionKey, (resumed.get(r.value.sessionKey) ?? 0) + 1);
  return { last, resumed };
}

/** A session's summary keys (for deleting the session). */
export async function turnSummaryKeys(store: Store, sessionKey: string): Promise<string[]> {
  const resumed = await store.list("meta", z.unknown(), { prefix: resumedPrefix(sessionKey), onCorrupt: () => {} });
  const last = await store.get("meta", lastTurnKey(sessionKey), z.unknown()).catch(() => undefined);
  return [...(last !== undefined ? [lastTurnKey(sessionKey)] : []), ...resumed.map((r) => r.key)];
}
