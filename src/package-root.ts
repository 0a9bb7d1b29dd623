import { fileURLToPath } from "node:url";

/**
 * The package root (where package.json and templates/ are). This file sits one level below it, in
 * src/ when run from source and in dist/ once bundled (every chunk is directly in dist/), so the
 * same relative path holds in both.
 */
export const PACKAGE_ROOT = fileURLToPath(new URL("../", import.meta.url));
