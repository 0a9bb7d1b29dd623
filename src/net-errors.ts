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
};

const TRUST_IT = "if you trust it, give its CA certificate (a PEM file) in NODE_EXTRA_CA_CERTS, or add it to the system store and set NODE_OPTIONS=--use-openssl-ca";
const RENEW_IT = "renew it on the server, or check this machine's clock";

/**
 * Node's codes for a certificate it rejected. The server answered (it is up): retrying cannot help,
 * trusting its CA (untrusted) or fixing the certificate (expired, another name) does.
 */
const CERTIFICATE_PROBLEMS: Record<string, { what: string; fix: string }> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: { what: "is not trusted here", fix: TRUST_IT },
  SELF_SIGNED_CERT_IN_CHAIN: { what: "is not trusted here", fix: TRUST_IT },
  UNABLE_TO_GET_ISSUER_CERT: { what: "is not trusted here", fix: TRUST_IT },
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: { what: "is not trusted here", fix: TRUST_IT },
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: { what: "is not trusted here", fix: TRUST_IT },
  CERT_UNTRUSTED: { what: "is not trusted here", fix: TRUST_IT },
  CERT_REJECTED: { what: "is not trusted here", fix: TRUST_IT },
  CERT_SIGNATURE_FAILURE: { what: "is not trusted here", fix: TRUST_IT },
  CERT_HAS_EXPIRED: { what: "has expired", fix: RENEW_IT },
  CERT_NOT_YET_VALID: { what: "is not valid yet", fix: RENEW_IT },
  ERR_TLS_CERT_ALTNAME_INVALID: { what: "is for another name", fix: "use a name the certificate lists in the URL" },
};

/** The first code among an error's causes that names a rejected certificate. */
function certificateCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const { code, cause, errors, message } = err as { code?: unknown; cause?: unknown; errors?: unknown[]; message?: unknown };
  if (typeof code === "string" && CERTIFICATE_PROBLEMS[code]) return code;
  // Passed on as text ("SSE error: TypeError: fetch failed: … DEPTH_ZERO_SELF_SIGNED_CERT").
  const named = typeof message === "string" ? Object.keys(CERTIFICATE_PROBLEMS).find((c) => message.includes(c)) : undefined;
  return named ?? certificateCode(cause, depth + 1) ?? (Array.isArray(errors) ? errors.map((e) => certificateCode(e, depth + 1)).find(Boolean) : undefined);
}

/** The server answered but its certificate was rejected: not transient, so not worth another try. */
export const isCertificateError = (err: unknown): boolean => certificateCode(err) !== undefined;

/** A rejected certificate in words ("<where> is up, but its TLS certificate is not trusted here (…)") and its fix; undefined for any other error. */
export function certificateProblem(err: unknown, where: string): { reason: string; fix: string } | undefined {
  const code = certificateCode(err);
  if (!code) return undefined;
  const { what, fix } = CERTIFICATE_PROBLEMS[code]!;
  return { reason: `${where} is up, but its TLS certificate ${what} (${rootCause(err) ?? code})`, fix };
}

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
 * code in its causes or its message), or a rejected certificate with how to fix it; `connectionError` says it is one even without a code (then
 * "could not connect to <where> (<innermost cause>)"). Undefined for any other error.
 */
export function describeNetworkError(err: unknown, where: string, connectionError = false): string | undefined {
  const certificate = certificateProblem(err, where);
  if (certificate) return `${certificate.reason}: ${certificate.fix}`;
  const code = systemCode(err) ?? codeInMessage(err);
  if (code && NETWORK_CAUSES[code]) return `${NETWORK_CAUSES[code]} ${where}`;
  if (!code && !connectionError) return undefined;
  const cause = rootCause(err);
  return `could not connect to ${where}${code ? ` (${code})` : cause ? ` (${cause})` : ""}`;
}
