import { loadedOpenAi } from "./openai-sdk.js";
import type { ResolvedProvider } from "./registry.js";
import { isQuotaError, ModelTimeoutError } from "./retry.js";

/** What a failed model call says to the user: the endpoint, what went wrong there, and what to check. */

/** The first system error code (ECONNREFUSED, ENOTFOUND…) in an error's causes: the SDK says only "Connection error." */
function systemCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const { code, cause, errors } = err as { code?: unknown; cause?: unknown; errors?: unknown[] };
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return code;
  return systemCode(cause, depth + 1) ?? (Array.isArray(errors) ? errors.map((e) => systemCode(e, depth + 1)).find(Boolean) : undefined);
}

/** The innermost cause's message: "fetch failed" says nothing, what it wraps does. */
function rootCause(err: unknown): string | undefined {
  let current = err as { cause?: unknown; message?: string } | undefined;
  for (let depth = 0; current?.cause && depth < 5; depth++) current = current.cause as typeof current;
  return current?.message;
}

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

/** What went wrong, naming the endpoint and what to check: never just "Connection error." */
export function describeModelError(err: unknown, resolved: Pick<ResolvedProvider, "spec" | "apiBase" | "model" | "configKey">): string {
  const where = resolved.apiBase;
  const key = `providers.${resolved.configKey ?? resolved.spec.name}`;
  // Our own timeouts already name the endpoint and which limit ran out.
  if (err instanceof ModelTimeoutError) return err.message;
  const sdk = loadedOpenAi();
  if (sdk && err instanceof sdk.APIConnectionTimeoutError) return `timed out waiting for ${where}`;
  if (sdk && err instanceof sdk.APIError && err.status) {
    const body = (err.error as { message?: unknown } | undefined)?.message;
    const detail = typeof body === "string" && body ? ` (${body})` : "";
    const hint =
      err.status === 401 || err.status === 403
        ? `check ${key}.apiKey`
        : err.status === 404
          ? `check the model name (${resolved.model}) and ${key}.apiBase`
          : isQuotaError(err)
            ? "the account is out of quota or credit (not retried): check its plan and billing"
            : err.status === 429
              ? "rate limited"
              : err.status >= 500
                ? "the provider had a server error"
                : err.status >= 300 && err.status < 400
                  ? `the endpoint redirects${err.headers?.get("location") ? ` to ${err.headers.get("location")}` : ""} (not followed): set ${key}.apiBase to where it moved`
                  : "the provider refused the request";
    return `HTTP ${err.status} from ${where}: ${hint}${detail}`;
  }
  if ((sdk && err instanceof sdk.APIConnectionError) || systemCode(err)) {
    const code = systemCode(err);
    if (code && NETWORK_CAUSES[code]) return `${NETWORK_CAUSES[code]} ${where}`;
    const cause = rootCause(err);
    return `could not connect to ${where}${code ? ` (${code})` : cause ? ` (${cause})` : ""}`;
  }
  return `${(err as Error)?.message ?? String(err)} (at ${where})`;
}
