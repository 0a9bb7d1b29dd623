import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";

/** What the import of nanobot's data (import.ts) records; light, so `troupe status` reads it without loading the import. */

export const IMPORT_MARKER = "nanobot-import";
export const importRecordSchema = lazySchema(() => z.object({
  at: z.number(),
  sessions: z.number().int().nonnegative(),
  cron: z.number().int().nonnegative(),
  /** What was left out, each with its reason. */
  skipped: z.array(z.string()),
}));
export type ImportRecord = z.infer<typeof importRecordSchema>;

/** The record `troupe status` reads (the store is the daemon's while it runs): a copy of the marker. */
export const importReportFile = (dataDir: string) => join(dataDir, "nanobot-import.json");

/** Where nanobot keeps them (nanobot-leftovers.ts looks in the same places): the workspace's first, then ~/.nanobot's. */
export function nanobotSources(workspace: string, home = homedir()) {
  const unique = (paths: string[]) => [...new Set(paths.map((p) => resolve(p)))];
  return {
    sessionDirs: unique([join(workspace, "sessions"), join(home, ".nanobot", "sessions")]),
    cronFiles: unique([join(workspace, "cron", "jobs.json"), join(home, ".nanobot", "cron", "jobs.json")]),
  };
}

/** Whether nanobot left anything to import here: without it the import (and what it loads) is skipped. */
export function nanobotDataPresent(workspace: string, home = homedir()): boolean {
  const { sessionDirs, cronFiles } = nanobotSources(workspace, home);
  return [...sessionDirs, ...cronFiles].some((p) => existsSync(p));
}

/** The jobs list of a nanobot jobs.json, or why there is none (the import and `troupe status` read it alike). */
export function parseNanobotCronStore(content: string): unknown[] | string {
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    return "not valid JSON";
  }
  const jobs = (data as { jobs?: unknown } | null)?.jobs;
  return Array.isArray(jobs) ? jobs : "no jobs list in it";
}
