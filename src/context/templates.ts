import { constants, existsSync } from "node:fs";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { PACKAGE_ROOT } from "../package-root.js";

/** templates/ in the repository: workspace files, prompt templates, built-in skills. */
export const TEMPLATES_DIR = join(PACKAGE_ROOT, "templates");
export const WORKSPACE_TEMPLATES_DIR = join(TEMPLATES_DIR, "workspace");
export const BUILTIN_SKILLS_DIR = join(TEMPLATES_DIR, "skills");

/** Every file of templates/workspace/ (a test holds it to the directory): named, so filling a workspace reads no directory. */
export const WORKSPACE_TEMPLATE_FILES = ["AGENTS.md", "HEARTBEAT.md", "SOUL.md", "USER.md", "memory/MEMORY.md"] as const;
/** Made empty where missing, as nanobot does. */
const EMPTY_FILES = ["memory/history.jsonl"];

/**
 * What `onboard`, `agent` and `gateway` do to the workspace (nanobot's sync_workspace_templates): each
 * missing template file is copied in, an empty memory/history.jsonl and skills/ are made; nothing that
 * exists is overwritten. When all is there it costs one existence check a file and reads no template.
 */
export async function fillWorkspace(workspace: string): Promise<{ created: string[]; kept: string[] }> {
  const created: string[] = [];
  const kept: string[] = [];
  for (const rel of [...WORKSPACE_TEMPLATE_FILES, ...EMPTY_FILES]) {
    const dest = join(workspace, rel);
    if (existsSync(dest)) {
      kept.push(rel);
      continue;
    }
    await mkdir(dirname(dest), { recursive: true });
    try {
      // Exclusive: a file another process made meanwhile is theirs.
      if (EMPTY_FILES.includes(rel)) await writeFile(dest, "", { flag: "wx" });
      else await copyFile(join(WORKSPACE_TEMPLATES_DIR, rel), dest, constants.COPYFILE_EXCL);
      created.push(rel);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      kept.push(rel);
    }
  }
  const skills = join(workspace, "skills");
  if (!existsSync(skills)) await mkdir(skills, { recursive: true });
  return { created, kept };
}
