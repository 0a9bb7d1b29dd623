import ipaddr from "ipaddr.js";
import { z } from "zod";

/** The fields config.json's schemas share (src/config/schema.ts, tools-schema.ts). */

/**
 * The bases the fields share, built once: each .int(), .positive(), .min() clones a zod schema, and a
 * cold `troupe agent -m` builds this module at every start (a chain such as
 * z.number().int().positive() took ~35 µs, adding a default to a built base ~2 µs, measured). zod
 * schemas are immutable, so one base serves every field; each field adds only its own default.
 */
export const text = z.string();
export const nonEmpty = z.string().min(1);
export const optionalText = text.nullable();
export const texts = z.array(text);
export const textRecord = z.record(text, text);
export const flag = z.boolean();
export const positive = z.number().positive();
export const positiveInt = z.number().int().positive();
export const nonNegative = z.number().nonnegative();
export const nonNegativeInt = z.number().int().nonnegative();
export const temperature = z.number().min(0).max(2);

const isRegex = (s: string) => {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
};
export const regexString = z.string().refine(isRegex, "not a valid regular expression");
export const addressOrCidr = z
  .string()
  .refine((s) => (s.includes("/") ? ipaddr.isValidCIDR(s) : ipaddr.isValid(s)), "expected an IP address or a CIDR such as 10.0.0.0/8");

export const isHttpUrl = (s: string) => {
  try {
    const url = new URL(s);
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== "";
  } catch {
    return false;
  }
};
/** An endpoint URL, refused when the config loads rather than at the first request. */
export const httpUrl = z.string().superRefine((s, ctx) => {
  if (isHttpUrl(s)) return;
  const example = s.includes("://") ? "https://api.example.com/v1" : `http://${s}`;
  ctx.addIssue({ code: "custom", message: `${JSON.stringify(s)} is not an http(s) URL (e.g. ${example})` });
});
/** Node fires a timer longer than 2^31-1 ms at once, so durations that become timers stay below it. */
export const MAX_TIMER_SECONDS = 2_147_483;
