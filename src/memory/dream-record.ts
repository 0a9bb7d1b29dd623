import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import type { Store } from "../store/store.js";

/**
 * Dream's record in the store (meta/dream): its next deadline, the run in progress (its phase, so a
 * killed Dream resumes there) and the last run's result. The cursor is not here: .dream_cursor is.
 */
export const dreamPhaseSchema = lazySchema(() => z.enum(["analysing", "editing", "committing"]));
export type DreamPhase = z.infer<typeof dreamPhaseSchema>;

export const dreamRunSchema = lazySchema(() => z.object({
  id: z.string(),
  phase: dreamPhaseSchema,
  /** The batch: history entries with fromCursor < cursor ≤ toCursor. */
  fromCursor: z.number().int().nonnegative(),
  toCursor: z.number().int().nonnegative(),
  entries: z.number().int().nonnegative(),
  startedAt: z.number(),
  analysis: z.string().optional(),
  summary: z.string().optional(),
  /** false: the editing phase stopped at maxIterations (absent in runs stored before it was kept: completed). */
  completed: z.boolean().optional(),
}));
export type DreamRun = z.infer<typeof dreamRunSchema>;

export const dreamRecordSchema = lazySchema(() => z.object({
  version: z.literal(1),
  /** When the next scheduled run is due (ms since the epoch). */
  nextAt: z.number(),
  run: dreamRunSchema.nullable(),
  lastRun: z.object({ at: z.number(), result: z.string(), sha: z.string().nullable() }).nullable(),
  /** The runs in a row that changed nothing on the batch starting after fromCursor. */
  unchanged: z.object({ fromCursor: z.number().int().nonnegative(), runs: z.number().int().positive() }).nullable().optional(),
}));
export type DreamRecord = z.infer<typeof dreamRecordSchema>;

const RECORD_KEY = "dream";

export async function readDreamRecord(store: Store): Promise<DreamRecord | undefined> {
  return store.get("meta", RECORD_KEY, dreamRecordSchema);
}

export const writeDreamRecord = (store: Store, record: DreamRecord) => store.batch([{ type: "put", sublevel: "meta", key: RECORD_KEY, value: record }], { sync: true });
