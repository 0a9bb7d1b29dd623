import { loadedOpenAi } from "./openai-sdk.js";
import { TroupeError } from "../errors.js";
import { isCertificateError } from "../net-errors.js";

/** The endpoint went quiet for the idle time (retryable), or the whole call ran past its timeout (not). */
export class ModelTimeoutError extends TroupeError {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** nanobot's codes and wording for an account out of quota or credit (a 429 or 402 that waiting does not clear). */
const QUOTA_CODES = new Set([
  "insufficient_quota",
  "quota_exceeded",
  "quota_exhausted",
  "billing_hard_limit_reached",
  "insufficient_balance",
  "credit_balance_too_low",
  "billing_not_active",
  "payment_required",
]);
const QUOTA_TEXT =
  /insufficient[_ ]quota|quota (exceeded|exhausted)|billing[_ ]hard[_ ]limit|billing not active|insufficient[_ ]balance|credit balance too low|payment required|out of (credits|quota)|exceeded your current quota/i;

/** The account is out of quota or credit: a 402, or a 429 whose code, type or message says so. Retrying cannot help. */
export function isQuotaError(err: unknown): boolean {
  const sdk = loadedOpenAi();
  if (!sdk || !(err instanceof sdk.APIError)) return false;
  if (err.status === 402) return true;
  if (err.status !== 429) return false;
  const body = (err.error ?? {}) as { code?: unknown; type?: unknown; message?: unknown };
  const tokens = [err.code, err.type, body.code, body.type].filter((t): t is string => typeof t === "string").map((t) => t.toLowerCase());
  return tokens.some((t) => QUOTA_CODES.has(t)) || QUOTA_TEXT.test(`${typeof body.message === "string" ? body.message : ""} ${err.message}`);
}

/** Which failures of a model call are worth another try: rate limits (not an empty quota), server errors, the network (not a rejected certificate), a stall. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ModelTimeoutError) return err.retryable;
  if (isQuotaError(err) || isCertificateError(err)) return false;
  const sdk = loadedOpenAi();
  if (sdk && err instanceof sdk.APIConnectionError) return true;
  if (sdk && err instanceof sdk.APIError) return err.status === 429 || err.status === 408 || (err.status ?? 0) >= 500;
  const code = (err as { code?: string }).code;
  return code === "ECONNRESET" || code === "ECONNREFUSED" || code === "ETIMEDOUT" || code === "UND_ERR_SOCKET";
}

/** Retry-After (seconds or an HTTP date), or retry-after-ms, in milliseconds. */
export function retryAfterMs(err: unknown, now: number): number | undefined {
  const sdk = loadedOpenAi();
  if (!sdk || !(err instanceof sdk.APIError) || !err.headers) return undefined;
  const headers = err.headers;
  const ms = Number(headers.get("retry-after-ms"));
  if (Number.isFinite(ms) && ms >= 0 && headers.get("retry-after-ms") !== null) return ms;
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export interface BackoffPolicy {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { maxRetries: 4, baseDelayMs: 1000, maxDelayMs: 30_000 };

/** agents.defaults.providerRetryMode: "standard" gives up after maxRetries; "persistent" retries transient failures until they clear or /stop. */
export type RetryMode = "standard" | "persistent";

/** nanobot's longest wait between persistent retries. */
export const PERSISTENT_MAX_DELAY_MS = 60_000;

/** The wait before retry `attempt` (0-based): Retry-After when given, else exponential with jitter. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, err: unknown, now: number, random = Math.random): number {
  const hinted = retryAfterMs(err, now);
  if (hinted !== undefined) return Math.min(hinted, policy.maxDelayMs);
  const exp = policy.baseDelayMs * 2 ** attempt;
  return Math.min(policy.maxDelayMs, exp / 2 + (random() * exp) / 2);
}
