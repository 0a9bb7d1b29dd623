import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { TEMPLATES_DIR } from "../context/templates.js";

/**
 * The workspace's own Dream guide (nanobot's prompts/dream.md): when it holds text, it replaces the
 * default guide of Dream's analysis phase (templates/prompts/dream-analyse.md: what to keep, in
 * which file); the editing phase's instructions (which tools, which files) stay troupe's.
 */

/** Where the guide is, relative to the workspace (answers name it so, never by the absolute path). */
export const DREAM_PROMPT_FILE = "prompts/dream.md";
/** As nanobot: a longer guide is cut here. */
export const DREAM_PROMPT_MAX_CHARS = 32_000;

export const defaultDreamGuide = () => readFile(join(TEMPLATES_DIR, "prompts", "dream-analyse.md"), "utf8");

/** The workspace's guide with its length before cutting, or undefined when it is missing, unreadable or blank. */
async function workspaceGuide(workspace: string): Promise<{ text: string; chars: number } | undefined> {
  const text = await readFile(join(workspace, DREAM_PROMPT_FILE), "utf8").then((t) => t.trimEnd(), () => "");
  if (!text.trim()) return undefined;
  return { text: text.length > DREAM_PROMPT_MAX_CHARS ? `${text.slice(0, DREAM_PROMPT_MAX_CHARS)}\n... (truncated)` : text, chars: text.length };
}

/** The analysis phase's system prompt: the workspace's guide, else the default. */
export async function dreamGuide(workspace: string): Promise<string> {
  return (await workspaceGuide(workspace))?.text ?? defaultDreamGuide();
}

/** /dream-prompt [init]: which guide Dream uses, or (init) an editable copy of the default. */
export async function dreamPromptCommand(workspace: string, arg?: string): Promise<string> {
  const path = join(workspace, DREAM_PROMPT_FILE);
  const file = `\`${DREAM_PROMPT_FILE}\``;
  if (arg && arg.toLowerCase() !== "init") {
    return `/dream-prompt does not know "${arg}". Usage: /dream-prompt [init] (init makes an editable copy of the default in ${DREAM_PROMPT_FILE})`;
  }
  const custom = await workspaceGuide(workspace);
  if (!arg) {
    if (!custom) return [`Dream memory instructions: troupe's default`, "", `- Editable file: ${file} in the workspace (not there yet)`, "- Run `/dream-prompt init` to make an editable copy of the default."].join("\n");
    const cut = custom.chars > DREAM_PROMPT_MAX_CHARS ? ` (${custom.chars} characters: Dream reads the first ${DREAM_PROMPT_MAX_CHARS})` : "";
    return [`Dream memory instructions: custom for this workspace`, "", `- File: ${file}${cut}`, `- Delete or empty ${file} to go back to troupe's default.`].join("\n");
  }
  const existing = await stat(path).catch(() => undefined);
  if (custom || (existing && !existing.isFile())) {
    return `${file} already exists in the workspace; it was left as it is.\n\nEdit it, or delete or empty it to go back to troupe's default.`;
  }
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${(await defaultDreamGuide()).trimEnd()}\n`);
  return [
    `Created ${file} in the workspace with troupe's default Dream instructions.`,
    "",
    `Edit it to teach Dream how to organize memory: it fully replaces troupe's default Dream guide (the analysis phase's) for this workspace. Delete or empty it to go back to the default.`,
  ].join("\n");
}
