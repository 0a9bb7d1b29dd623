import { join } from "node:path";
import { PACKAGE_ROOT } from "../package-root.js";

/** templates/ in the repository: workspace files, prompt templates, built-in skills. */
export const TEMPLATES_DIR = join(PACKAGE_ROOT, "templates");
export const WORKSPACE_TEMPLATES_DIR = join(TEMPLATES_DIR, "workspace");
export const BUILTIN_SKILLS_DIR = join(TEMPLATES_DIR, "skills");
