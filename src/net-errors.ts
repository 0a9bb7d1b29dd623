/**
 * A request that never got an answer, in words. fetch says only "fetch failed" (the OpenAI SDK
 * "Connection error."); what it wraps, Node's system error, says why. Shared by the model calls
 * and the MCP connections.
 */

const NETWORK_CAUSES: Record<string, string> = {
  ECONNREFUSED: "connection refused at",
  ENOTFOUND: "host not found:",
  EAI_AGAIN: "host not found (DNS lookup failed):",
  ETIMEDOUT: "timed out connecting to",
  ECONNRESET: "connection reset by",
  EHOSTUNREACH: "host unreachable:",
  ENETUNREACH: "network unreachable for",
  CERT_HAS_EXPIRED: "TLS certificate expired at",
};

/** The first system error code (ECONNREFUSED, ENOTFOUND…) in an error's causes. */
export function systemCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const { code, cause, errors } = err as { code?: unknown; cause?: unknown; errors?: unknown[] };
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return code;
  return systemCode(cause, depth + 1) ?? (Array.isArray(errors) ? errors.map((e) => systemCode(e, depth + 1)).find(Boolean) : undefined);
}

/** A known code only named in a message: an error passed on as text ("SSE error: TypeError: fetch failed: connect ECONNREFUSED …"). */
function codeInMessage(err: unknown): string | undefined {
  const message = (err as { message?: unknown } | undefined)?.message;
  if (typeof message !== "string") return undefined;
  return Object.keys(NETWORK_CAUSES).find((code) => new RegExp(`\\b${code}\\b`).test(message));
}

/** The innermost cause's message: "fetch failed" says nothing, what it wraps does. */
export function rootCause(err: unknown): string | undefined {
  let current = err as { cause?: unknown; message?: string } | undefined;
  for (let depth = 0; current?.cause && depth < 5; depth++) current = current.cause as typeof current;
  return current?.message;
}

/**
 * "connection refused at <where>" and the like when `err` is a network failure (a system error
 * code in its causes or its message); `connectionError` says it is one even without a code (then
 * "could not connect to <where> (<innermost cause>)"). Undefined for any other error.
 */
export function describeNetworkError(err: unknown, where: string, connectionError = false): string | undefined {
  const code = systemCode(err) ?? codeInMessage(err);
  if (code && NETWORK_CAUSES[code]) return `${NETWORK_CAUSES[code]} ${where}`;
  if (!code && !connectionError) return undefined;
  const cause = rootCause(err);
  return `could not connect to ${where}${code ? ` (${code})` : cause ? ` (${cause})` : ""}`;
}
