import { createHash, randomBytes } from "node:crypto";
import { lstat, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { imagePart, MAX_IMAGE_BYTES, sniffImageMime, type ImagePart } from "../../context/media.js";
import { ToolError } from "../contract.js";
import type { FetchedPage } from "../http-fetch.js";
import { keepUnderCap } from "../media-cap.js";

const SHOWN = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const EXT: Record<string, string> = { "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp" };
/** The result web_fetch gives for an image; its last line names the saved copy imageOf reads back. */
const RESULT = /^\(Image fetched from: [\s\S]+\)\n\[(image\/(?:png|jpeg|gif|webp)), \d+ bytes, saved as ([^\n]+)\]$/;

/**
 * A fetched image, saved under `dir` (named by its content, so a re-run after a restart writes the
 * same file; the oldest images beyond `capBytes` removed) and answered with nanobot's "(Image fetched from: <url>)" and where it was saved: results
 * stay text, and the next model request shows the image itself (savedImageOf, tool-images.ts).
 * undefined when the body is no image; an image the model cannot be shown is a ToolError saying why.
 */
export async function fetchedImage(page: FetchedPage, url: string, dir: string, capBytes: number): Promise<string | undefined> {
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
  const path = join(dir, `${createHash("sha256").update(page.body).digest("hex").slice(0, 16)}${EXT[mime]}`);
  try {
    await mkdir(dir, { recursive: true });
    await saveWhole(path, page.body);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ToolError(`could not save the image from ${url} under the data dir's media/web (${code}); check that folder's permissions and the free disk space`);
  }
  // The folder is bounded; a failed pass leaves it as it was (the next save tries again).
  await keepUnderCap(dir, capBytes, basename(path)).catch(() => undefined);
  return `(Image fetched from: ${url})\n[${mime}, ${page.body.length} bytes, saved as ${path}]`;
}

/**
 * Writes the file whole or not at all (a request built meanwhile never reads half an image), through
 * a temp name of this fetch's own: chats fetching the same image at once each write their own copy.
 * The name says the content, so when another fetch's rename wins, the file that is there is this one.
 */
async function saveWhole(path: string, body: Buffer): Promise<void> {
  const partial = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.part`;
  await writeFile(partial, body);
  try {
    await rename(partial, path);
  } catch (err) {
    await rm(partial, { force: true });
    if (!(await lstat(path).then((s) => s.isFile(), () => false))) throw err;
  }
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
