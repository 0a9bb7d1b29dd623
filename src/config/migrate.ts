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
  migrateMyTool(raw, notes);
  migrateTranscription(raw, notes);
  return raw;
}

const MY_TOOL = 'troupe has no "my" tool (nanobot\'s tool with which the agent checks, and with tools.my.allowSet changes, its own runtime settings), so it is ignored';

/** nanobot's first `my` tool settings, tools.myEnabled and tools.mySet, are tools.my.enable and allowSet now (nanobot's loader moves them). */
function migrateMyTool(raw: Record<string, unknown>, notes: string[]): void {
  const tools = raw.tools;
  if (!isPlainObject(tools)) return;
  for (const [legacy, field] of [["myEnabled", "enable"], ["mySet", "allowSet"]] as const) {
    const snake = legacy.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    for (const key of [legacy, snake]) {
      if (!(key in tools)) continue;
      const my = isPlainObject(tools.my) ? tools.my : undefined;
      const taken = my && (field in my || field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) in my);
      if (taken) notes.push(`tools.${key} is ignored: tools.my.${field} is set; ${MY_TOOL}`);
      else {
        (my ?? (tools.my = {}) as Record<string, unknown>)[field] = tools[key];
        notes.push(`tools.${key} is nanobot's former name for tools.my.${field}: moved there, as nanobot does; ${MY_TOOL}`);
      }
      delete tools[key];
    }
  }
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
