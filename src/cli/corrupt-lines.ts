import type { CorruptRecord } from "../store/store.js";
import { printable } from "./printable.js";

/** One line per record a listing skipped because it is corrupt (for stderr: the listing itself stays clean). */
export const corruptLines = (corrupt: CorruptRecord[] = []): string[] =>
  corrupt.map((c) => printable(`warning: skipped corrupt record ${c.sublevel}/${c.key} (${c.problem})`));
