import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../package-root.js";

/**
 * The inspector's assets: its own files next to this module, and elkjs from node_modules. Nothing
 * comes from a CDN; the page works offline.
 */
const require = createRequire(import.meta.url);
// From the package root, not from this module: once bundled, this code runs from dist/.
const here = (name: string) => join(PACKAGE_ROOT, "src", "server", "inspector", name);

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8", html: "text/html; charset=utf-8" };

/** Asset name (as in /inspector/<name>) → its file. */
const FILES: Record<string, () => string> = {
  "index.html": () => here("index.html"),
  "app.js": () => here("app.js"),
  "app.css": () => here("app.css"),
  "statechart.js": () => here("statechart.js"),
  "statechart.css": () => here("statechart.css"),
  "elk.bundled.js": () => require.resolve("elkjs/lib/elk.bundled.js"),
};

const cache = new Map<string, string>();

/** An asset's text and content type, or undefined for a name that is not one. */
export async function inspectorAsset(name: string): Promise<{ body: string; type: string } | undefined> {
  const file = Object.hasOwn(FILES, name) ? FILES[name]!() : undefined;
  if (!file) return undefined;
  let body = cache.get(name);
  if (body === undefined) {
    body = await readFile(file, "utf8");
    cache.set(name, body);
  }
  return { body, type: TYPES[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream" };
}

/** Text safe inside an inline <script> element. */
export const inlineScript = (text: string) => text.replace(/<\/(script)/gi, "<\\/$1").replace(/<!--/g, "<\\!--");
