/**
 * The openai SDK (~150 modules) loads only where it is used (voice transcription). Model calls go
 * over our own transport (transport.ts) and need only the SDK's error classes, so that failures
 * read as they always have (status, body, headers; retry and quota rules test `instanceof`): that
 * small module loads with the first failure. Before it has loaded no error can be one of them.
 */
import type * as OpenAiSdk from "openai";
import type * as OpenAiErrors from "openai/core/error";

type Sdk = typeof OpenAiSdk;
type Errors = typeof OpenAiErrors;

let sdk: Sdk | undefined;
let errors: Errors | undefined;

export async function loadOpenAi(): Promise<Sdk> {
  sdk ??= await import("openai");
  errors ??= await import("openai/core/error");
  return sdk;
}

export async function loadOpenAiErrors(): Promise<Errors> {
  return (errors ??= await import("openai/core/error"));
}

/** The SDK's error classes if anything has loaded them; error checks use them to test `instanceof`. */
export const loadedOpenAi = (): Errors | undefined => errors;
