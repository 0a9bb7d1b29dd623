import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { lazySchema } from "../../lazy-schema.js";
import { defineTool } from "../contract.js";
import type { FileReads } from "../file-reads.js";
import { displayPath, resolveToolPath, type Sandbox } from "../sandbox.js";

export function writeFileTool(sandbox: Sandbox, reads?: FileReads) {
  return defineTool({
    name: "write_file",
    description: "Write a file (whole content), creating parent directories as needed. Overwrites an existing file.",
    parameters: lazySchema(() => z.object({
      path: z.string().describe("File path, relative to the workspace or absolute"),
      content: z.string().describe("The complete file content"),
    })),
    // The same call twice leaves the same file: safe to repeat after a crash.
    idempotent: true,
    async execute({ path, content }, ctx) {
      const full = resolveToolPath(sandbox, path, "write");
      await mkdir(dirname(full), { recursive: true });
      await writeFile(full, content, "utf8");
      reads?.saw(ctx, full, content);
      return `Wrote ${Buffer.byteLength(content)} bytes to ${displayPath(sandbox, full)}`;
    },
  });
}
