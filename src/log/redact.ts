/**
 * Secrets are scrubbed from every log line, wherever they appear: known values (configured api
 * keys and tokens) and the shapes of common ones, so a key inside a URL or an error message
 * is caught too.
 */
const SECRET_SHAPES: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{8,}/g, // OpenAI-style and OpenRouter (sk-or-...) keys
  /(?<![0-9])\d{6,12}:[A-Za-z0-9_-]{30,}/g, // Telegram bot tokens
  /\b(?:gsk|xai|BSA)[_-]?[A-Za-z0-9_-]{16,}/g, // Groq, xAI, Brave keys
  /(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
];

export const REDACTED = "[REDACTED]";

export function createRedactor(knownSecrets: Iterable<string>): (text: string) => string {
  const known = [...new Set([...knownSecrets].filter((s) => s.length >= 6))].sort((a, b) => b.length - a.length);
  // Tested first without replacing (no copies): nearly every text (log lines, snapshot strings) has nothing to redact.
  const probes = SECRET_SHAPES.map((shape) => new RegExp(shape.source, shape.flags.replace("g", "")));
  return (text) => {
    if (!known.some((secret) => text.includes(secret)) && !probes.some((probe) => probe.test(text))) return text;
    let out = text;
    for (const secret of known) out = out.split(secret).join(REDACTED);
    for (const shape of SECRET_SHAPES) {
      out = out.replace(shape, (match, prefix?: unknown) =>
        typeof prefix === "string" && /^Bearer/i.test(prefix) ? `${prefix}${REDACTED}` : REDACTED,
      );
    }
    return out;
  };
}

type Texts = Record<string, string>;

/**
 * Every credential in a config, for createRedactor: api keys and tokens, a provider's extraHeaders and
 * extraQuery values whose names say they are secret, and the userinfo of every configured URL
 * ("http://user:pass@host"), in each form a request or an error message may quote them.
 */
export function secretsOf(config: {
  providers: Record<string, { apiKey: string; apiBase?: string | null; extraHeaders?: Texts | null; extraQuery?: Texts | null }>;
  channels: { telegram: { token: string; apiRoot?: string }; transcription: { apiKey: string; apiBase?: string | null } };
  tools: {
    web: { proxy?: string | null; search: { apiKey: string; baseUrl?: string } };
    mcpServers?: Record<string, { env: Texts; headers: Texts; url?: string }>;
  };
}): string[] {
  const providers = Object.values(config.providers);
  const urls = [
    ...providers.map((p) => p.apiBase),
    config.channels.transcription.apiBase,
    config.channels.telegram.apiRoot,
    config.tools.web.proxy,
    config.tools.web.search.baseUrl,
    ...Object.values(config.tools.mcpServers ?? {}).map((s) => s.url),
  ];
  return [
    ...providers.map((p) => p.apiKey),
    ...providers.flatMap((p) => [...secretValues(p.extraHeaders ?? {}), ...secretValues(p.extraQuery ?? {}).flatMap(queryForms)]),
    ...urls.flatMap((url) => (url ? userinfoOf(url) : [])),
    config.channels.telegram.token,
    config.channels.transcription.apiKey,
    config.tools.web.search.apiKey,
    ...mcpSecrets(config.tools.mcpServers ?? {}),
  ].filter(Boolean);
}

// Names that say a value is a credential: MCP env and headers, and nanobot's credential query
// parameters (web.py _CREDENTIAL_QUERY_PARAMS: key, sig, signature, jwt, code… and x-amz-/x-goog-).
const SECRET_NAME = /key|token|secret|passw|pwd|auth|credential|cookie|signature|session|jwt|ticket|assertion|^sig$|^code$|^x-(amz|goog)-/i;

function secretValues(values: Texts): string[] {
  return Object.entries(values)
    .filter(([name, value]) => SECRET_NAME.test(name) && value.length >= 6)
    .map(([, value]) => value);
}

/** A query value as written, and as a URL carries it (form-encoded by searchParams, or percent-encoded). */
function queryForms(value: string): string[] {
  return [value, new URLSearchParams({ v: value }).toString().slice(2), encodeURIComponent(value)];
}

/** The user and password of "scheme://user:pass@host", as the URL spells them and decoded. */
function userinfoOf(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  return [parsed.username, parsed.password].filter(Boolean).flatMap((part) => {
    try {
      return [part, decodeURIComponent(part)];
    } catch {
      return [part];
    }
  });
}

/** MCP servers' credentials: env and header values whose names say they are secret. */
export function mcpSecrets(servers: Record<string, { env: Texts; headers: Texts }>): string[] {
  return Object.values(servers).flatMap((s) => [...secretValues(s.env), ...secretValues(s.headers)]);
}
