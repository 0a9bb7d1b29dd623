import { describeNetworkError } from "../net-errors.js";
import { loadedOpenAi } from "./openai-sdk.js";
import type { ResolvedProvider } from "./registry.js";
import { isQuotaError, ModelTimeoutError } from "./retry.js";

/** What a failed model call says to the user: the endpoint, what went wrong there, and what to check. */

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
  const network = describeNetworkError(err, where, Boolean(sdk && err instanceof sdk.APIConnectionError));
  if (network) return network;
  return `${(err as Error)?.message ?? String(err)} (at ${where})`;
}
