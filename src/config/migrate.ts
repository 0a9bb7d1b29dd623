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
  return raw;
}
