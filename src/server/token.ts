import { readFile, writeFile } from "node:fs/promises";
import type * as Crypto from "node:crypto";
import { lazyRequire } from "../builtin.js";

/** Not loaded by a client that only reads the token (`troupe agent -m` through the daemon). */
const crypto = lazyRequire<typeof Crypto>("node:crypto");

/** The control API's bearer token: read from its file, or created there (mode 600) at first start. */
export async function ensureToken(file: string): Promise<string> {
  const existing = await readToken(file);
  if (existing) return existing;
  const token = crypto().randomBytes(32).toString("hex");
  await writeFile(file, `${token}\n`, { mode: 0o600, flag: "w" });
  return token;
}

export async function readToken(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, "utf8")).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Compares in constant time, so the token cannot be guessed byte by byte. */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header?.startsWith("Bearer ") ? header.slice(7).trim() : "");
  const want = Buffer.from(token);
  return given.length === want.length && crypto().timingSafeEqual(given, want);
}
