/**
 * The openai SDK (~150 modules) loads with the first model call, not with every command. Its error
 * classes are only ever thrown by it, so before it has loaded no error can be one of them.
 */
import type * as OpenAiSdk from "openai";

type Sdk = typeof OpenAiSdk;

let sdk: Sdk | undefined;

export async function loadOpenAi(): Promise<Sdk> {
  return (sdk ??= await import("openai"));
}

/** The SDK if a model call has loaded it; error checks use it to test `instanceof`. */
export const loadedOpenAi = (): Sdk | undefined => sdk;
