import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";
import { apiAttachmentSchema } from "../channels/api-media.js";
import { InvalidSessionKeyError, parseSessionKey } from "../session-key.js";

/**
 * The control API's request plumbing, shared by the daemon's server (http.ts) and the one an
 * in-process `troupe agent` serves (agent-api.ts): bodies read within their limit and parsed, errors
 * as statuses, JSON answers, refusals while the store fails.
 */

export interface ControlServer {
  url: string;
  close(): Promise<void>;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const messageBody = lazySchema(() => z.object({ content: z.string().trim().min(1, "content must not be empty") }).strict());
/** The daemon's messages also take files (`media`); audio among them is transcribed. */
export const apiMessageBody = lazySchema(() => z
  .object({ content: z.string().trim().default(""), media: z.array(apiAttachmentSchema).max(10, "at most 10 media files per message").default([]) })
  .strict()
  .refine((b) => b.content || b.media.length, "content must not be empty (or send media)"));
const MAX_BODY_BYTES = 1024 * 1024;
/** How long the rest of a refused body is read (and dropped) before the connection is cut. */
const LINGER_MS = 5_000;

const tooLarge = () => new HttpError(413, `body too large: the limit is 1 MiB (${MAX_BODY_BYTES} bytes)`);
const declaredLength = (req: IncomingMessage) => Number(req.headers["content-length"] ?? 0);
/** Whether the body a request declares is within the limit (an undeclared one is checked as it is read). */
export const declaredWithinLimit = (req: IncomingMessage) => declaredLength(req) <= MAX_BODY_BYTES;

/** The body, up to the limit: refused by its Content-Length before any of it is read, or as soon as a chunked body passes it. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  if (declaredLength(req) > MAX_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => req.off("data", onData).off("end", onEnd).off("error", onError);
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      done();
      chunks.length = 0;
      reject(tooLarge());
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    req.on("data", onData).on("end", onEnd).on("error", onError);
  });
}

/**
 * Answers a refused body while the client may still be sending it. The answer is written whole
 * (its length is declared, so the client can read it at once), but the response is ended only once
 * the rest of the body has been read and dropped: ending it earlier closes the connection under a
 * client that is still sending, which resets it, and the answer is lost with it. A client still
 * sending after LINGER_MS is cut off.
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.write(text);
  if (req.complete) return void res.end();
  const finish = () => {
    clearTimeout(cut);
    res.end();
  };
  const cut = setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
  req.once("end", finish).once("close", finish);
  req.resume();
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const body = await readBody(req);
  try {
    return JSON.parse(body.toString("utf8") || "null");
  } catch {
    throw new HttpError(400, "body is not valid JSON");
  }
}

/** A path segment (a job or turn id) percent-decoded; a malformed encoding is the client's mistake, a 400. */
export function pathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `malformed percent-encoding in the path: ${segment}`);
  }
}

/** The session key in a path segment: percent-decoded and checked. */
export function sessionKeyOf(segment: string): string {
  const key = pathSegment(segment);
  try {
    return parseSessionKey(key);
  } catch (err) {
    if (err instanceof InvalidSessionKeyError) throw new HttpError(400, err.message);
    throw err;
  }
}

export function parseBody<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  throw new HttpError(400, result.error.issues.map((i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`).join("; "));
}

/** The client's `Idempotency-Key` header: a retried POST with the same key is the same message. */
export function idempotencyKeyOf(req: IncomingMessage): string | undefined {
  const value = req.headers["idempotency-key"];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^[A-Za-z0-9._:-]{1,128}$/.test(value)) {
    throw new HttpError(400, "Idempotency-Key must be 1-128 characters of A-Z a-z 0-9 . _ : - (a UUID will do)");
  }
  return value;
}

export const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
};

/** How long a client refused for a failing store is asked to wait before it retries (the store is probed every few seconds). */
const RETRY_AFTER_S = 10;

/** A refusal while the store is failing: nothing was accepted; the client should retry later. */
export const refuseStore = (res: ServerResponse, status: number, error: string) => {
  res.setHeader("retry-after", String(RETRY_AFTER_S));
  json(res, status, { error, retry: "later" });
};
