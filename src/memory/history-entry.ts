/**
 * One entry of memory/history.jsonl as nanobot writes it: its schema (with troupe's `archived`
 * range), nanobot's timestamp, and the file parsed into entries.
 */
import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";

export const historyEntrySchema = lazySchema(() => z
  .object({
    cursor: z.number().int().nonnegative(),
    timestamp: z.string(),
    content: z.string(),
    session_key: z.string().optional(),
    /** troupe's addition: which session messages this entry archived, so a crash can tell it was written. */
    archived: z
      .object({ epoch: z.number().int().nonnegative(), from: z.number().int().nonnegative(), to: z.number().int().nonnegative(), createdAt: z.number() })
      .optional(),
  })
  .loose());
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

/** One formatter per time zone (building one costs far more than formatting with it); null for a zone Intl does not know. */
const stampFormats = new Map<string, Intl.DateTimeFormat | null>();
function stampFormat(timezone: string): Intl.DateTimeFormat | null {
  let format = stampFormats.get(timezone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat("en-CA", { timeZone: timezone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    } catch {
      format = null;
    }
    stampFormats.set(timezone, format);
  }
  return format;
}

/** "YYYY-MM-DD HH:MM" in the given timezone, nanobot's history timestamp. */
export function historyTimestamp(at: Date, timezone = "UTC"): string {
  let parts: Intl.DateTimeFormatPart[];
  try {
    const format = stampFormat(timezone);
    if (!format) throw new RangeError(`unknown time zone ${timezone}`);
    parts = format.formatToParts(at);
  } catch {
    return at.toISOString().slice(0, 16).replace("T", " ");
  }
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "00";
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}`;
}

/** Every well-formed entry, oldest first; lines that do not parse (a torn write, an outside edit) are skipped. */
export function parseHistory(text: string): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = historyEntrySchema.safeParse(json);
    if (parsed.success) entries.push(parsed.data);
  }
  return entries;
}
