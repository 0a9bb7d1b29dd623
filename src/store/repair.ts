import { cp, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ClassicLevel } from "classic-level";
import { TroupeError } from "../errors.js";
import { sessionsOverview } from "./session-view.js";
import { openStore } from "./store.js";
import { listTurns } from "./turns.js";

/** Bytes the store's files take. */
export async function storeSize(storeDir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(storeDir).catch(() => [] as string[])) total += (await stat(join(storeDir, name)).catch(() => ({ size: 0 }))).size;
  return total;
}

export interface RepairReport {
  /** Where the damaged store was copied before the repair. */
  copy: string;
  sessions: number;
  turns: number;
  /** Records that still do not read (listed, not repaired). */
  corrupt: number;
}

/**
 * Repairs a damaged store with LevelDB's own repair (it rebuilds the manifest from the tables and
 * logs it finds, and keeps what it cannot read under lost/), after copying the store aside so the
 * repair loses nothing that was there. Then reads the store back and counts what it holds.
 */
export async function repairStore(storeDir: string, now = new Date()): Promise<RepairReport> {
  const copy = `${storeDir}.damaged-${now.toISOString().replace(/[:.]/g, "-")}`;
  try {
    await cp(storeDir, copy, { recursive: true, errorOnExist: true, force: false });
  } catch (err) {
    throw new TroupeError(`could not copy the store aside to ${copy} before repairing it: ${(err as Error).message}; free space (or copy it yourself) and run troupe doctor --repair again`, { cause: err });
  }
  try {
    await ClassicLevel.repair(storeDir);
  } catch (err) {
    throw new TroupeError(`LevelDB could not repair ${storeDir}: ${(err as Error).message}; the damaged store is kept at ${copy}`, { cause: err });
  }
  const store = await openStore(storeDir, { readOnly: true });
  try {
    const { sessions, corrupt } = await sessionsOverview(store);
    const turns = (await listTurns(store, { onCorrupt: (r) => corrupt.push(r) })).length;
    return { copy, sessions: sessions.length, turns, corrupt: corrupt.length };
  } finally {
    await store.close();
  }
}
