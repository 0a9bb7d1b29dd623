import { describe, expect, it } from "vitest";
import { abbreviatePath, formatToolHints } from "../../src/tools/hints.js";

// The cases of nanobot's tests/agent/test_tool_hint.py, with troupe's tool names where they differ.
const HOME = "/home/user";
const tc = (name: string | null, args: unknown) => ({ name, arguments: args });
const hint = (calls: ReturnType<typeof tc>[], max = 40) => formatToolHints(calls, max, HOME);

describe("tool hints: known tools", () => {
  it("read_file shows the path", () => {
    expect(hint([tc("read_file", { path: "foo.txt" })])).toBe("read foo.txt");
    const long = hint([tc("read_file", { path: "/opt/user/.local/share/uv/tools/nanobot/agent/loop.py" })]);
    expect(long).toMatch(/^read …\/.*loop\.py$/);
  });

  it("write_file shows the path, never the content", () => {
    expect(hint([tc("write_file", { path: "docs/api.md", content: "# API Reference\n\nLong content..." })])).toBe("write docs/api.md");
  });

  it("edit_file and edit show the path", () => {
    expect(hint([tc("edit_file", { path: "src/main.py", old_text: "x", new_text: "y" })])).toBe("edit src/main.py");
    expect(hint([tc("edit", { file_path: "src/main.py", old_string: "x", new_string: "y" })])).toBe("edit src/main.py");
  });

  it("grep shows the pattern in quotes", () => {
    expect(hint([tc("grep", { pattern: "TODO|FIXME", path: "src" })])).toBe('grep "TODO|FIXME"');
  });

  it("exec shows the command after $", () => {
    expect(hint([tc("exec", { command: "npm install typescript" })])).toBe("$ npm install typescript");
    expect(hint([tc("exec", { command: "npm test" })])).toBe("$ npm test");
  });

  it("a long command is cut", () => {
    const result = hint([tc("exec", { command: "cd /very/long/path && cat file && echo done && sleep 1 && ls -la" })]);
    expect(result.startsWith("$ ")).toBe(true);
    expect(result.length).toBeLessThanOrEqual(50);
    expect(result.endsWith("…")).toBe(true);
  });

  it("paths in commands are folded: Windows, Unix, ~/, quoted with spaces", () => {
    const win = hint([tc("exec", { command: "cd D:\\Documents\\GitHub\\nanobot\\.worktree\\tomain\\nanobot && git diff origin/main...pr-2706 --name-only 2>&1" })]);
    expect(win).toContain("…/");
    expect(win).not.toContain("worktree");
    const unix = hint([tc("exec", { command: "cd /srv/user/projects/nanobot/.worktree/tomain && make build" })]);
    expect(unix).toContain("…/");
    expect(unix).not.toContain("projects");
    expect(hint([tc("exec", { command: "cd ~/projects/nanobot/workspace && pytest tests/" })])).toContain("…/");
    const quoted = hint([tc("exec", { command: 'cd "/srv/user/My Documents/project" && pytest tests/' })]);
    expect(quoted).toContain("…/");
    expect(quoted).not.toContain('"/srv/user/My Documents/project"');
    expect(quoted).toContain('"');
    const quotedWin = hint([tc("exec", { command: 'cd "C:/Program Files/Git/project" && git status' })]);
    expect(quotedWin).toContain("…/");
    expect(quotedWin).not.toContain('"C:/Program Files/Git/project"');
    const chained = hint([tc("exec", { command: "cd D:\\Documents\\GitHub\\project && npm run build && npm test" })]);
    expect(chained).toContain("…/");
    expect(chained).toContain("npm");
  });

  it("web_search, web_fetch and list_dir", () => {
    expect(hint([tc("web_search", { query: "Claude 4 vs GPT-4" })])).toBe('search "Claude 4 vs GPT-4"');
    expect(hint([tc("web_fetch", { url: "https://example.com/page" })])).toBe("fetch https://example.com/page");
    expect(hint([tc("list_dir", { path: "/tmp" })])).toBe("ls /tmp");
  });
});

describe("tool hints: MCP tools as server::tool", () => {
  it("names the server and the tool", () => {
    const std = hint([tc("mcp_4_5v_mcp__analyze_image", { imageSource: "https://img.jpg", prompt: "describe" })]);
    expect(std).toContain("4_5v");
    expect(std).toContain("analyze_image");
    expect(hint([tc("mcp_github__create_issue", { title: "Bug fix" })])).toBe('github::create_issue("Bug fix")');
    // troupe's own naming: mcp_<server>_<tool>
    expect(hint([tc("mcp_github_create_issue", { title: "Bug fix" })])).toBe('github::create_issue("Bug fix")');
    expect(hint([tc("mcp_github_list", {})])).toBe("github::list");
  });
});

describe("tool hints: other tools", () => {
  it("shows the first argument when it is text", () => {
    expect(hint([tc("custom_tool", { data: "hello world" })])).toBe('custom_tool("hello world")');
    const long = hint([tc("custom_tool", { data: "a".repeat(60) })]);
    expect(long.length).toBeLessThan(80);
    expect(long).toContain("…");
    expect(hint([tc("custom_tool", { count: 42 })])).toBe("custom_tool");
    expect(hint([])).toBe("");
  });

  it("takes arguments as an object, a JSON text or a list, and survives none", () => {
    expect(hint([tc("read_file", [])])).toBe("read_file");
    expect(hint([tc("read_file", null)])).toBe("read_file");
    expect(hint([tc("custom_tool", [])])).toBe("custom_tool");
    expect(hint([tc("custom_tool", null)])).toBe("custom_tool");
    expect(hint([tc("read_file", '{"path":"a.py"}')])).toBe("read a.py");
    expect(hint([tc("read_file", [{ path: "a.py" }])])).toBe("read a.py");
  });

  it("skips a call without a name and keeps the others", () => {
    expect(hint([tc(null, null)])).toBe("");
    expect(hint([tc("", { path: "foo.txt" })])).toBe("");
    expect(hint([tc(null, null), tc("read_file", { path: "foo.txt" })])).toBe("read foo.txt");
  });
});

describe("tool hints: folding and joining", () => {
  it("folds consecutive identical hints only", () => {
    expect(hint([tc("grep", { pattern: "*.py" })])).not.toContain("×");
    expect(hint([tc("grep", { pattern: "*.py" }), tc("grep", { pattern: "*.ts" })])).not.toContain("×");
    expect(hint([tc("grep", { pattern: "TODO" }), tc("grep", { pattern: "TODO" })])).toBe('grep "TODO" × 2');
    expect(hint([tc("read_file", { path: "a.py" }), tc("read_file", { path: "b.py" }), tc("read_file", { path: "c.py" })])).not.toContain("×");
    expect(hint([tc("grep", { pattern: "a" }), tc("read_file", { path: "f.py" }), tc("grep", { pattern: "b" })])).not.toContain("×");
  });

  it("joins different hints with commas", () => {
    expect(hint([tc("grep", { pattern: "TODO" }), tc("read_file", { path: "main.py" })])).toBe('grep "TODO", read main.py');
    const parts = hint([
      tc("read_file", { path: "a.py" }),
      tc("read_file", { path: "b.py" }),
      tc("grep", { pattern: "x" }),
      tc("grep", { pattern: "y" }),
      tc("read_file", { path: "c.py" }),
    ]).split(", ");
    expect(parts).toHaveLength(5);
  });
});

describe("tool hints: the length limit (agents.defaults.toolHintMaxLength)", () => {
  const cmd = "cd /very/long/path/to/some/project && npm run build && npm test";
  it("exec is cut at the limit; a larger one shows more", () => {
    const short = hint([tc("exec", { command: cmd })], 40);
    expect(short.length).toBeLessThanOrEqual(50);
    expect(short).toContain("…");
    const long = hint([tc("exec", { command: cmd })], 120);
    expect(long.length).toBeGreaterThan(short.length);
    expect(long).toContain("npm test");
    expect(hint([tc("exec", { command: "cd /srv/user/project && npm install && npm run build" })], 120)).toContain("npm run build");
  });

  it("paths, other tools and MCP tools follow the limit", () => {
    const longPath = "/srv/user/.local/share/uv/tools/nanobot/agent/loop.py";
    for (const name of ["read_file", "edit_file", "list_dir"]) {
      expect(hint([tc(name, { path: longPath })], 120).length).toBeGreaterThan(hint([tc(name, { path: longPath })], 40).length);
    }
    const value = "a".repeat(100);
    expect(hint([tc("custom_tool", { data: value })], 60)).toContain("…");
    expect(hint([tc("custom_tool", { data: value })], 60).length).toBeGreaterThan(hint([tc("custom_tool", { data: value })], 40).length);
    const url = "https://example.com/very/long/path/to/resource";
    expect(hint([tc("mcp_github__fetch", { url })], 80).length).toBeGreaterThanOrEqual(hint([tc("mcp_github__fetch", { url })], 40).length);
  });
});

describe("abbreviatePath", () => {
  it("keeps short paths, puts ~ for the home directory, keeps the file name", () => {
    expect(abbreviatePath("src/a.ts", 40, HOME)).toBe("src/a.ts");
    expect(abbreviatePath("/home/user/notes/today.md", 40, HOME)).toBe("~/notes/today.md");
    expect(abbreviatePath("/a/very/long/directory/name/that/goes/on/file.txt", 25, HOME)).toBe("…/that/goes/on/file.txt");
    expect(abbreviatePath("https://example.com/a/b/c/d/e/f/g/h/i/report.pdf", 40, HOME)).toBe("example.com/…/c/d/e/f/g/h/i/report.pdf");
  });
});
