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

/** Every api key and token in a config, for createRedactor. */
export function secretsOf(config: {
  providers: Record<string, { apiKey: string }>;
  channels: { telegram: { token: string }; transcription: { apiKey: string } };
  tools: { web: { search: { apiKey: string } }; mcpServers?: Record<string, { env: Record<string, string>; headers: Record<string, string> }> };
}): string[] {
  const mcp = mcpSecrets(config.tools.mcpServers ?? {});
  return [
    ...Object.values(config.providers).map((p) => p.apiKey),
    config.channels.telegram.token,
    config.channels.transcription.apiKey,
    config.tools.web.search.apiKey,
    ...mcp,
  ].filter(Boolean);
}

/** MCP servers' credentials: env and header values whose names say they are secret. */
export function mcpSecrets(servers: Record<string, { env: Record<string, string>; headers: Record<string, string> }>): string[] {
  const secretName = /key|token|secret|password|passwd|auth|credential|cookie/i;
  return Object.values(servers).flatMap((s) =>
    [...Object.entries(s.env), ...Object.entries(s.headers)].filter(([name, value]) => secretName.test(name) && value.length >= 6).map(([, value]) => value),
  );
}
