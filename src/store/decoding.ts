import type { z } from "zod";
import { CorruptRecordError } from "../errors.js";
import { SUB_PREFIX, type SublevelName } from "./encoding.js";

/** Stored text read back as records: parsed, checked against their schema, a bad one reported. */

/** A stored record that does not match its schema (or is not JSON), as a listing reports it. */
export interface CorruptRecord {
  sublevel: SublevelName;
  key: string;
  problem: string;
}

export interface ListOptions {
  /**
   * Given, a corrupt record is skipped and reported here, so one bad record cannot break a listing.
   * Without it a corrupt record fails the whole list with CorruptRecordError.
   */
  onCorrupt?: (record: CorruptRecord) => void;
}

/**
 * Values are read as text and decoded here, so an undecodable one is a corrupt record, not a
 * LEVEL_DECODE_ERROR. Text this process wrote itself (`own`: answered from the record cache or the
 * range mirror, see known.ts) is JSON text of a value its writer built as the record's type, so it
 * is parsed but not checked against the schema again (the issue's "no zod parse of data we just
 * wrote": a session's meta read back at each turn, its inbox rows); whatever comes from LevelDB
 * (another run's records, at open or after a reopen) is checked.
 */
export function parseRecord<S extends z.ZodType>(sublevel: SublevelName, key: string, text: string, schema: S, own = false): { value: z.infer<S> } | { corrupt: CorruptRecord } {
  if (own) return { value: JSON.parse(text) as z.infer<S> };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { corrupt: { sublevel, key, problem: "not valid JSON" } };
  }
  const result = schema.safeParse(value);
  if (result.success) return { value: result.data };
  const issue = result.error.issues[0];
  const where = issue?.path.length ? `${issue.path.map(String).join(".")}: ` : "";
  return { corrupt: { sublevel, key, problem: `${where}${issue?.message ?? "does not match its schema"}` } };
}

/** Listed rows (root keys, stored text) as records of the sublevel. */
export function decodeRows<S extends z.ZodType>(sublevel: SublevelName, rows: Array<[string, string, boolean?]>, schema: S, opts: ListOptions): Array<{ key: string; value: z.infer<S> }> {
  const at = SUB_PREFIX[sublevel];
  const out: Array<{ key: string; value: z.infer<S> }> = [];
  for (const [prefixed, text, own] of rows) {
    const key = prefixed.slice(at.length);
    const parsed = parseRecord(sublevel, key, text, schema, own);
    if ("value" in parsed) out.push({ key, value: parsed.value });
    else if (opts.onCorrupt) opts.onCorrupt(parsed.corrupt);
    else throw corruptRecordError(parsed.corrupt);
  }
  return out;
}

export const corruptRecordError = (c: CorruptRecord) =>
  Object.assign(new CorruptRecordError(`record ${c.sublevel}/${c.key} does not match its schema: ${c.problem}`), { record: c });
