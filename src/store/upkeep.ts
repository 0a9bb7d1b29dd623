import type { Logger } from "../log/logger.js";
import { sweepBlobs } from "./blobs.js";
import { compactTurns, type CompactionPolicy } from "./compact.js";
import { diskSpace, floorBytes, lowSpaceLine } from "./disk.js";
import { MARKER_RETENTION_MS, pruneMarkers } from "./markers.js";
import type { Store } from "./store.js";
import { referencedBlobs } from "./turns.js";

/** The free space under the data dir, as /health and `troupe status` show it (last measured). */
export type DiskState = { free: number; size: number; floor: number; low: string | null } | null;

export interface UpkeepOptions {
  store: Store;
  logger: Logger;
  dataDir: string;
  floor: { freeSpaceFloorMB: number; freeSpaceFloorPercent: number };
  compaction: CompactionPolicy;
  /** The inspector's view of a turn, kept when its journal is compacted. */
  turnView: (turnId: string) => Promise<Record<string, unknown> | undefined>;
  markerRetentionMs?: number;
  diskCheckMs?: number;
}

/**
 * What keeps the store healthy while the daemon runs: the free space under the data dir measured
 * every 30 s (a warning below the floor, and when it is back), and the store kept bounded at start
 * and hourly (old seen/sent markers pruned, finished turns' journals compacted, prompt chunks no turn
 * refers to dropped, the space reclaimed).
 */
export async function startUpkeep(opts: UpkeepOptions) {
  const { store, logger } = opts;
  let disk: DiskState = null;
  const checkDisk = async () => {
    try {
      const space = await diskSpace(opts.dataDir);
      const low = lowSpaceLine(space, opts.floor, opts.dataDir) ?? null;
      if (low && !disk?.low) logger.warn({ free: space.free, size: space.size }, `disk space low: ${low}`);
      else if (!low && disk?.low) logger.info({ free: space.free }, "disk space back above the floor");
      disk = { ...space, floor: floorBytes(space, opts.floor), low };
    } catch (err) {
      logger.warn({ err }, "could not measure the free disk space");
    }
  };
  await checkDisk();
  const diskTimer = setInterval(() => void checkDisk(), opts.diskCheckMs ?? 30_000).unref();

  let pruning = Promise.resolve();
  const prune = () =>
    (pruning = pruning
      .then(() => pruneMarkers(store, Date.now(), opts.markerRetentionMs ?? MARKER_RETENTION_MS))
      .then((n) => void (n && logger.info({ markers: n }, "pruned old seen/sent markers")))
      .then(() => compactTurns(store, Date.now(), opts.compaction, opts.turnView))
      .then(async (n) => {
        if (n) logger.info({ turns: n }, "compacted finished turns' journals into their summaries");
        // Stored prompt chunks no turn input names any more (finished turns' inputs are pruned).
        const swept = await sweepBlobs(store, () => referencedBlobs(store));
        if (swept) logger.info({ blobs: swept }, "dropped stored prompt chunks no turn refers to");
        if (n || swept) await store.reclaim();
      })
      .catch((err) => logger.warn({ err }, "pruning old records failed; will try again")));
  void prune();
  const pruneTimer = setInterval(prune, 3600_000).unref();

  return {
    disk: () => disk,
    /** Prunes and compacts now (after a run in progress). */
    run: prune,
    async stop() {
      clearInterval(diskTimer);
      clearInterval(pruneTimer);
      await pruning;
    },
  };
}
