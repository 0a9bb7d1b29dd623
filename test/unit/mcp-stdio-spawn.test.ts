import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ProcessGroupStdioTransport } from "../../src/mcp/stdio-transport.js";
import { useTempDirs } from "../helpers/tmp.js";

const start = (command: string, cwd?: string) =>
  new ProcessGroupStdioTransport({ command, args: ["-m", "qvp_mcp"], env: { PATH: "/usr/bin:/bin" }, cwd, setting: "tools.mcpServers.qvp-tools" }).start().then(
    () => "started",
    (err: Error) => err.message,
  );

describe("an MCP stdio command that cannot be started is named, with the setting to fix", () => {
  const tmp = useTempDirs();

  it("a command that does not exist: a nanobot config from Windows (nanobot passes a command as-is off Windows: test_normalize_windows_stdio_command_is_noop_off_windows)", async () => {
    const windows = "C:/Users/user01/OneDrive/Desktop/ANJU项目/code/.venv/Scripts/python.exe";
    expect(await start(windows)).toBe(`command not found: ${windows} (check tools.mcpServers.qvp-tools.command)`);
    expect(await start("no-such-mcp-server")).toBe("command not found: no-such-mcp-server (check tools.mcpServers.qvp-tools.command)");
  });

  it("a file that is not executable, and a cwd that does not exist, say so", async () => {
    const dir = await tmp();
    const script = join(dir, "server.sh");
    await writeFile(script, "#!/bin/sh\n");
    await chmod(script, 0o644);
    expect(await start(script)).toBe(`command not executable: ${script} (permission denied; check tools.mcpServers.qvp-tools.command, or chmod +x it)`);
    await mkdir(join(dir, "sub"));
    expect(await start(script.replace("server.sh", "sub"))).toMatch(/^command not executable: .*sub \(permission denied/);
    await chmod(script, 0o755);
    const missing = join(dir, "gone");
    expect(await start(script, missing)).toBe(`working directory not found: ${missing} (check tools.mcpServers.qvp-tools.cwd)`);
  });
});
