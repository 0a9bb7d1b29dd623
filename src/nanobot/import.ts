import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { getJob, putJobOps } from "../cron/jobs.js";
import { createCronService } from "../cron/service.js";
import { consolidationStateOp } from "../memory/session-state.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta } from "../store/sessions.js";
import type { Store, StoreOp } from "../store/store.js";
import { mapNanobotJob } from "./cron.js";
import { IMPORT_MARKER, importRecordSchema, importReportFile, nanobotSources, parseNanobotCronStore, type ImportRecord } from "./record.js";
import { parseNanobotSession } from "./sessions.js";

/**
 * Carries a nanobot user's conversations and cron jobs over, once per data dir: when the gateway or
 * an in-process agent first starts on it. What it imports and the marker saying it was done go in one
 * synced batch, so a crash imports all or nothing and a restart never imports twice. nanobot's files
 * are only read. A troupe session or job with the same key or id is never overwritten.
 */

export { IMPORT_MARKER, importRecordSchema, importReportFile, nanobotSources, type ImportRecord };

interface Log {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ImportDeps {
  store: Store;
  workspace: string;
  dataDir: string;
  defaultTz: string;
  logger: Log;
  home?: string;
  now?: () => number;
}

const readOrUndefined = (file: string) => readFile(file, "utf8").catch(() => undefined);

async function sessionOps(deps: ImportDeps, dirs: string[], now: number, skipped: string[]) {
  const ops: StoreOp[] = [];
  const taken = new Set<string>();
  let found = 0;
  for (const dir of dirs) {
    const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".jsonl")).sort();
    for (const name of names) {
      found++;
      const file = join(dir, name);
      const text = await readOrUndefined(file);
      const parsed = text === undefined ? "it does not read" : parseNanobotSession(text, name);
      const skip = (why: string) => skipped.push(`session ${file}: ${why}`);
      if (typeof parsed === "string") {
        skip(parsed);
        continue;
      }
      parsed.skipped.forEach((line) => deps.logger.warn({ file }, `nanobot session ${file}: ${line}, left out`));
      if (!parsed.messages.length) skip("no messages");
      else if (taken.has(parsed.key)) skip(`session ${parsed.key} is imported already from an earlier file`);
      else if (await getSessionMeta(deps.store, parsed.key).catch(() => true)) skip(`troupe has a session ${parsed.key} already (kept as it is)`);
      else {
        taken.add(parsed.key);
        const createdAt = parsed.createdAt ?? parsed.messages[0]?.at ?? now;
        let meta = newSessionMeta(parsed.key, createdAt);
        for (const m of parsed.messages) {
          const appended = appendMessagesOps(meta, [m.message], null, m.at ?? createdAt);
          // The message's put; the meta is put once, below.
          ops.push(appended.ops[0]!);
          meta = appended.meta;
        }
        ops.push(...appendMessagesOps(meta, [], null, parsed.updatedAt ?? meta.updatedAt).ops);
        if (parsed.lastConsolidated) ops.push(consolidationStateOp(parsed.key, { epoch: 0, lastConsolidated: parsed.lastConsolidated, createdAt }));
      }
    }
  }
  return { ops, found, imported: taken.size };
}

async function cronOps(deps: ImportDeps, files: string[], now: number, skipped: string[]) {
  const ops: StoreOp[] = [];
  const taken = new Set<string>();
  let found = 0;
  const { buildJob } = createCronService({ store: deps.store, defaultTz: deps.defaultTz, now: () => now });
  for (const file of files) {
    const text = await readOrUndefined(file);
    if (text === undefined) continue;
    found++;
    const jobs = parseNanobotCronStore(text);
    if (typeof jobs === "string") {
      skipped.push(`cron store ${file}: ${jobs}`);
      continue;
    }
    for (const raw of jobs) {
      const mapped = mapNanobotJob(raw, buildJob, now);
      const skip = (why: string) => skipped.push(`cron job ${mapped.id}${mapped.name ? ` (${mapped.name})` : ""} in ${file}: ${why}`);
      if (!mapped.job) skip(mapped.skip ?? "cannot be read");
      else if (taken.has(mapped.id)) skip("imported already from an earlier file");
      else if (await getJob(deps.store, mapped.id).catch(() => true)) skip(`troupe has a cron job ${mapped.id} already (kept as it is)`);
      else {
        taken.add(mapped.id);
        ops.push(...putJobOps(mapped.job));
      }
    }
  }
  return { ops, found, imported: taken.size };
}

const writeReport = (dataDir: string, record: ImportRecord) => writeFile(importReportFile(dataDir), `${JSON.stringify(record)}\n`).catch(() => undefined);

/** Imports what nanobot left, unless done before; the record of it, or undefined when there was nothing (or it was done). */
export async function importNanobot(deps: ImportDeps): Promise<ImportRecord | undefined> {
  const done = await deps.store.get("meta", IMPORT_MARKER, importRecordSchema).catch(() => undefined);
  if (done) {
    // The report is a copy: put back if it went.
    if ((await readOrUndefined(importReportFile(deps.dataDir))) === undefined) await writeReport(deps.dataDir, done);
    return undefined;
  }
  const now = (deps.now ?? Date.now)();
  const { sessionDirs, cronFiles } = nanobotSources(deps.workspace, deps.home);
  const skipped: string[] = [];
  const sessions = await sessionOps(deps, sessionDirs, now, skipped);
  const cron = await cronOps(deps, cronFiles, now, skipped);
  // Nothing of nanobot's here (yet): looked for again at the next start.
  if (!sessions.found && !cron.found) return undefined;
  const record: ImportRecord = { at: now, sessions: sessions.imported, cron: cron.imported, skipped };
  await deps.store.batch([...sessions.ops, ...cron.ops, { type: "put", sublevel: "meta", key: IMPORT_MARKER, value: record }], { sync: true });
  for (const s of skipped) deps.logger.warn({ nanobot: s }, `nanobot import: skipped ${s}`);
  deps.logger.info({ sessions: record.sessions, cron: record.cron, skipped: skipped.length, sessionDirs, cronFiles }, `imported ${record.sessions} sessions and ${record.cron} cron jobs from nanobot`);
  await writeReport(deps.dataDir, record);
  return record;
}
