import { statfs } from "node:fs/promises";

export interface DiskSpace {
  /** Bytes an unprivileged process may still write. */
  free: number;
  size: number;
}

export interface SpaceFloor {
  freeSpaceFloorMB: number;
  freeSpaceFloorPercent: number;
}

const MB = 1024 * 1024;

/** Free and total bytes of the file system holding `dir`. */
export async function diskSpace(dir: string): Promise<DiskSpace> {
  const s = await statfs(dir);
  return { free: s.bavail * s.bsize, size: s.blocks * s.bsize };
}

/** The floor in bytes: the configured MB or share of the disk, whichever is smaller (a small disk is not always "low"). */
export const floorBytes = (space: DiskSpace, floor: SpaceFloor) => Math.min(floor.freeSpaceFloorMB * MB, (space.size * floor.freeSpaceFloorPercent) / 100);

export const formatBytes = (n: number) => (n >= 10 * MB ? `${Math.round(n / MB)} MB` : n >= MB ? `${(n / MB).toFixed(1)} MB` : `${Math.round(n / 1024)} KB`);

/** The warning when the free space is under the floor, else undefined. */
export function lowSpaceLine(space: DiskSpace, floor: SpaceFloor, dataDir: string): string | undefined {
  const limit = floorBytes(space, floor);
  if (space.free >= limit) return undefined;
  return `only ${formatBytes(space.free)} free on the disk holding ${dataDir} (floor ${formatBytes(limit)}, storage.freeSpaceFloorMB / freeSpaceFloorPercent): free space before it fills`;
}
