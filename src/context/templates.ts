import { fileURLToPath } from "node:url";
import { join } from "node:path";

/** templates/ in the repository: workspace files, prompt templates, built-in skills. */
export const TEMPLATES_DIR = fileURLToPath(new URL("../../templates/", import.meta.url));
export const WORKSPACE_TEMPLATES_DIR = join(TEMPLATES_DIR, "workspace");
export const BUILTIN_SKILLS_DIR = join(TEMPLATES_DIR, "skills");
