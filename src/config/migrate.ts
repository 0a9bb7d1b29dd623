import { isPlainObject } from "./normalize.js";

/**
 * Moves keys from older nanobot/troupe layouts to where the schema expects them, so an old
 * config keeps working. Each step says what it moved.
 */
export function migrateConfig(raw: Record<string, unknown>, notes: string[]): Record<string, unknown> {
  const tools = raw.tools;
  if (isPlainObject(tools) && isPlainObject(tools.exec)) {
    // nanobot once kept restrictToWorkspace under tools.exec.
    for (const key of ["restrictToWorkspace", "restrict_to_workspace"]) {
      if (key in tools.exec) {
        if (!("restrictToWorkspace" in tools) && !("restrict_to_workspace" in tools)) {
          tools.restrictToWorkspace = tools.exec[key];
        }
        delete tools.exec[key];
        notes.push(`tools.exec.${key} moved to tools.restrictToWorkspace`);
      }
    }
  }
  // troupe keeps maxToolResultChars under tools; nanobot has it under agents.defaults.
  const agents = raw.agents;
  const defaults = isPlainObject(agents) ? agents.defaults : undefined;
  if (isPlainObject(defaults)) {
    for (const key of ["maxToolResultChars", "max_tool_result_chars"]) {
      if (!(key in defaults)) continue;
      const target = isPlainObject(raw.tools) ? raw.tools : (raw.tools = {});
      if (isPlainObject(target) && !("maxToolResultChars" in target) && !("max_tool_result_chars" in target)) {
        target.maxToolResultChars = defaults[key];
        notes.push(`agents.defaults.${key} is read as tools.maxToolResultChars (where troupe keeps it)`);
      }
      delete defaults[key];
    }
  }
  if (isPlainObject(defaults)) aliasIdleCompact(defaults, notes);
  migrateTranscription(raw, notes);
  return raw;
}

const present = (v: unknown) => v !== undefined && v !== null;

/**
 * Transcription serves every channel from `channels` (nanobot's transcriptionProvider and
 * transcriptionLanguage, with troupe's endpoint settings in channels.transcription). Read there:
 * troupe's earlier channels.telegram.transcription, and nanobot's top-level `transcription` block
 * (whose provider and language win over the channels keys, as in nanobot).
 */
function migrateTranscription(raw: Record<string, unknown>, notes: string[]): void {
  const channels = isPlainObject(raw.channels) ? raw.channels : undefined;
  const telegram = channels && isPlainObject(channels.telegram) ? channels.telegram : undefined;
  if (channels && telegram && isPlainObject(telegram.transcription)) {
    if (!isPlainObject(channels.transcription)) {
      channels.transcription = telegram.transcription;
      notes.push("channels.telegram.transcription is read as channels.transcription (transcription now serves every channel)");
    } else {
      notes.push("channels.telegram.transcription is ignored: channels.transcription is set (transcription serves every channel)");
    }
    delete telegram.transcription;
  }
  const top = raw.transcription;
  if (!isPlainObject(top)) return;
  const target = channels ?? (raw.channels = {});
  if (!isPlainObject(target)) return;
  const moved: string[] = [];
  const take = (keys: string[], to: (v: unknown) => void) => {
    for (const key of keys) {
      if (!(key in top)) continue;
      if (present(top[key])) {
        to(top[key]);
        moved.push(`transcription.${key}`);
      }
      delete top[key];
    }
  };
  take(["provider"], (v) => {
    delete target.transcription_provider;
    target.transcriptionProvider = v;
  });
  take(["language"], (v) => {
    delete target.transcription_language;
    target.transcriptionLanguage = v;
  });
  const endpoint = () => (isPlainObject(target.transcription) ? target.transcription : (target.transcription = {})) as Record<string, unknown>;
  take(["model"], (v) => (endpoint().model = v));
  take(["enabled"], (v) => (endpoint().enabled = v));
  take(["maxUploadMb", "max_upload_mb"], (v) => (endpoint().maxUploadMb = v));
  if (moved.length) notes.push(`${moved.join(", ")} ${moved.length > 1 ? "are" : "is"} read from channels (transcription serves every channel there)`);
  if (Object.keys(top).length === 0) delete raw.transcription;
}

/** nanobot reads idleCompactAfterMinutes and, failing it, its older name sessionTtlMinutes (AliasChoices in that order). */
function aliasIdleCompact(defaults: Record<string, unknown>, notes: string[]): void {
  const current = ["idleCompactAfterMinutes", "idle_compact_after_minutes"].some((k) => k in defaults);
  for (const key of ["sessionTtlMinutes", "session_ttl_minutes"]) {
    if (!(key in defaults)) continue;
    if (!current) {
      defaults.idleCompactAfterMinutes = defaults[key];
      notes.push(`agents.defaults.${key} is read as agents.defaults.idleCompactAfterMinutes (its newer name)`);
    }
    delete defaults[key];
  }
}
