import { createHash } from "node:crypto";
import { lstat, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { imagePart, MAX_IMAGE_BYTES, sniffImageMime, type ImagePart } from "../../context/media.js";
import { ToolError } from "../contract.js";
import type { FetchedPage } from "../http-fetch.js";

const SHOWN = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const EXT: Record<string, string> = { "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp" };
/** The result web_fetch gives for an image; its last line names the saved copy imageOf reads back. */
const RESULT = /^\(Image fetched from: [\s\S]+\)\n\[(image\/(?:png|jpeg|gif|webp)), \d+ bytes, saved as ([^\n]+)\]$/;

/**
 * A fetched image, saved under `dir` (named by its content, so a re-run after a restart writes the
 * same file) and answered with nanobot's "(Image fetched from: <url>)" and where it was saved: results
 * stay text, and the next model request shows the image itself (savedImageOf, tool-images.ts).
 * undefined when the body is no image; an image the model cannot be shown is a ToolError saying why.
 */
export async function fetchedImage(page: FetchedPage, url: string, dir: string): Promise<string | undefined> {
  const declared = page.contentType.split(";")[0]!.trim();
  const mime = sniffImageMime(page.body);
  if (!mime) {
    // SVG is XML: it is shown as text.
    if (!declared.startsWith("image/") || declared.includes("svg")) return undefined;
    if (SHOWN.has(declared)) throw new ToolError(`${url} says ${declared} but is not a PNG, JPEG, GIF or WebP image; the model can be shown only those`);
    throw new ToolError(`${url} is an ${declared} image; the model can be shown only PNG, JPEG, GIF and WebP: look for one of those (or convert it with exec)`);
  }
  if (page.cut || page.body.length > MAX_IMAGE_BYTES) {
    throw new ToolError(`the image at ${url} is larger than web_fetch takes (${page.body.length} bytes read before it stopped); look for a smaller version of it`);
  }
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${createHash("sha256").update(page.body).digest("hex").slice(0, 16)}${EXT[mime]}`);
  // Whole or not at all: a request built meanwhile never reads half an image.
  const partial = `${path}.${process.pid}.part`;
  await writeFile(partial, page.body);
  await rename(partial, path);
  return `(Image fetched from: ${url})\n[${mime}, ${page.body.length} bytes, saved as ${path}]`;
}

/** The image a web_fetch result stands for, read again from its saved copy in `dir`; undefined when it is not there as it was. */
export async function savedImageOf(result: string, dir: string): Promise<ImagePart | undefined> {
  const m = RESULT.exec(result);
  if (!m || dirname(resolve(m[2]!)) !== resolve(dir)) return undefined;
  try {
    const info = await lstat(m[2]!);
    if (!info.isFile() || info.size > MAX_IMAGE_BYTES) return undefined;
    const bytes = await readFile(m[2]!);
    return sniffImageMime(bytes) === m[1] ? imagePart(m[1]!, bytes) : undefined;
  } catch {
    return undefined;
  }
}
