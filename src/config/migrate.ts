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
  return raw;
}
