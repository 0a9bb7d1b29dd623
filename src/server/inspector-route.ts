import type { ServerResponse } from "node:http";
import { inspectorAsset } from "./inspector/assets.js";
import { HttpError } from "./request-io.js";

const SECURITY_HEADERS = {
  "cache-control": "no-cache",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Everything from troupe itself; no CDN, no external font.
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
};

/** The inspector page and its assets: no token needed to load them (they hold no data); the page asks for it. */
export async function serveInspector(res: ServerResponse, path: string): Promise<void> {
  if (path === "/inspector") return void res.writeHead(308, { location: "/inspector/" }).end();
  const name = path.slice("/inspector/".length) || "index.html";
  const asset = await inspectorAsset(name);
  if (!asset) throw new HttpError(404, `no inspector asset ${name}`);
  res.writeHead(200, { "content-type": asset.type, "content-length": Buffer.byteLength(asset.body), ...SECURITY_HEADERS }).end(asset.body);
}
