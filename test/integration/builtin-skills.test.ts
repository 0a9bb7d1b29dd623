import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { unzipSync, zipSync } from "fflate";
import { afterEach, describe, expect, it } from "vitest";
import { loadSkills, readSkill } from "../../src/context/skills.js";
import { BUILTIN_SKILLS_DIR } from "../../src/context/templates.js";
import { findOnPath } from "../../src/tools/bwrap.js";
import { useTempDirs } from "../helpers/tmp.js";

/** The skills troupe ships, and nanobot's built-in skills they stand for. */
const SHIPPED = ["clawhub", "cron", "github", "memory", "skill-creator", "summarize", "tmux", "weather"];
const script = (skill: string, file: string) => join(BUILTIN_SKILLS_DIR, skill, "scripts", file);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (never throws for its exit code). */
function run(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: opts.cwd, env: { ...process.env, HTTP_PROXY: "", HTTPS_PROXY: "", http_proxy: "", https_proxy: "", ALL_PROXY: "", all_proxy: "", ...opts.env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}
const node = (file: string, args: string[], opts?: { cwd?: string; env?: NodeJS.ProcessEnv }) => run(process.execPath, [file, ...args], opts);

describe("built-in skills: every one is valid and its scripts run", () => {
  it("ships nanobot's built-in skills, each read by troupe without a warning and named after its folder", async () => {
    expect((await readdir(BUILTIN_SKILLS_DIR)).sort()).toEqual(SHIPPED);
    for (const name of SHIPPED) {
      const path = join(BUILTIN_SKILLS_DIR, name, "SKILL.md");
      const s = readSkill(await readFile(path, "utf8"), name, path, "builtin", process.env);
      expect({ name, warnings: s.warnings, broken: s.broken }).toEqual({ name, warnings: [], broken: [] });
      expect(s.description.length, `${name}'s description`).toBeGreaterThan(30);
      expect(s.body.length, `${name}'s body`).toBeGreaterThan(300);
    }
  });

  it.each(SHIPPED)("%s passes skill-creator's validator", async (name) => {
    const r = await node(script("skill-creator", "validate-skill.mjs"), [join(BUILTIN_SKILLS_DIR, name)]);
    expect(r).toEqual({ code: 0, stdout: `ok: ${name} is a valid skill\n`, stderr: "" });
  });

  it("every script is runnable: shell scripts parse and answer --help, Node scripts answer --help", async () => {
    const scripts: string[] = [];
    for (const name of SHIPPED) {
      const dir = join(BUILTIN_SKILLS_DIR, name, "scripts");
      if (existsSync(dir)) scripts.push(...(await readdir(dir)).map((f) => join(dir, f)));
    }
    expect(scripts.length).toBe(6);
    for (const file of scripts) {
      expect(statSync(file).mode & 0o111, `${file} is executable`).not.toBe(0);
      const r = file.endsWith(".sh") ? await run("bash", [file, "--help"]) : await node(file, ["--help"]);
      expect({ file, code: r.code }).toEqual({ file, code: 0 });
      expect(r.stdout + r.stderr).toMatch(/Usage/);
      if (file.endsWith(".sh")) expect((await run("bash", ["-n", file])).code).toBe(0);
    }
  });
});

describe("skill-creator: scaffold → validate → package → install round trip", () => {
  const tempDir = useTempDirs();
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  /** A ClawHub-compatible registry on 127.0.0.1 serving the given archives by slug. */
  async function registry(archives: Record<string, Uint8Array>, seen: string[] = []): Promise<string> {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      seen.push(url.pathname + url.search);
      if (url.pathname === "/api/v1/search") {
        const q = url.searchParams.get("q") ?? "";
        const results = Object.keys(archives)
          .filter((slug) => slug.includes(q.split(" ")[0] ?? ""))
          .map((slug) => ({ slug, displayName: slug, summary: `The ${slug} skill.`, version: "1.0.0" }));
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results }));
        return;
      }
      const archive = url.pathname === "/api/v1/download" ? archives[url.searchParams.get("slug") ?? ""] : url.pathname.startsWith("/files/") ? archives[url.pathname.slice(7)] : undefined;
      if (!archive) return void res.writeHead(404, { "content-type": "text/plain" }).end("Skill not found");
      res.writeHead(200, { "content-type": "application/zip" }).end(Buffer.from(archive));
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  it("creates a skill, refuses it while it has placeholders, packages it once filled in, and installs it into another workspace", async () => {
    const work = await tempDir();
    const init = await node(script("skill-creator", "init-skill.mjs"), ["trip-notes", "--resources", "scripts,references", "--examples"], { cwd: work });
    expect(init.code).toBe(0);
    const dir = join(work, "skills", "trip-notes");
    expect(init.stdout).toContain(`created ${dir}`);
    expect((await readdir(dir)).sort()).toEqual(["SKILL.md", "references", "scripts"]);
    expect((await run(join(dir, "scripts", "example.mjs"), ["x"])).stdout).toBe("hello from x\n");

    const draft = await node(script("skill-creator", "validate-skill.mjs"), [dir]);
    expect(draft.code).toBe(1);
    expect(draft.stdout).toContain("description still has the TODO placeholder");
    const refused = await node(script("skill-creator", "package-skill.mjs"), [dir, join(work, "dist")]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not packaged: .* is not a valid skill/);
    expect(existsSync(join(work, "dist", "trip-notes.skill"))).toBe(false);

    await writeFile(
      join(dir, "SKILL.md"),
      `---\nname: trip-notes\ndescription: Keep travel notes per trip. Use when the user plans or reports on a trip.\nmetadata: {"nanobot":{"requires":{"bins":["node"]}}}\n---\n# Trip notes\n\nKeep one file per trip under trips/. Run scripts/example.mjs to greet.\n`,
    );
    expect((await node(script("skill-creator", "validate-skill.mjs"), [dir])).stdout).toBe("ok: trip-notes is a valid skill\n");
    const packed = await node(script("skill-creator", "package-skill.mjs"), [dir, join(work, "dist")]);
    expect(packed.code).toBe(0);
    const archive = await readFile(join(work, "dist", "trip-notes.skill"));
    expect(Object.keys(unzipSync(archive)).sort()).toEqual(["trip-notes/SKILL.md", "trip-notes/references/reference.md", "trip-notes/scripts/example.mjs"]);

    const seen: string[] = [];
    const url = await registry({ "trip-notes": archive }, seen);
    const other = await tempDir();
    const installed = await node(script("clawhub", "clawhub.mjs"), ["install", "trip-notes", "--registry", url, "--version", "1.0.0"], { cwd: other });
    expect(installed.stderr).toBe("");
    expect(installed.stdout).toContain(`installed ${join(other, "skills", "trip-notes")} (3 files): Keep travel notes per trip.`);
    expect(seen).toEqual(["/api/v1/download?slug=trip-notes&version=1.0.0"]);
    expect(statSync(join(other, "skills", "trip-notes", "scripts", "example.mjs")).mode & 0o111).not.toBe(0);
    const skills = await loadSkills(other, process.env);
    expect(skills.find((s) => s.name === "trip-notes")).toMatchObject({ source: "workspace", description: "Keep travel notes per trip. Use when the user plans or reports on a trip.", missing: [], broken: [] });
  });

  it("the validator says what is wrong, as nanobot's does (placeholder, a stray file, a name that is not the folder's)", async () => {
    const work = await tempDir();
    const make = async (folder: string, text: string, extra?: string) => {
      await mkdir(join(work, folder), { recursive: true });
      await writeFile(join(work, folder, "SKILL.md"), text);
      if (extra) await writeFile(join(work, folder, extra), "x");
      return (await node(script("skill-creator", "validate-skill.mjs"), [join(work, folder)])).stdout;
    };
    expect(await make("a-skill", "---\nname: a-skill\ndescription: Does a thing well.\n---\nbody\n", "README.md")).toContain(
      "README.md should not be in the skill's folder: only SKILL.md, scripts/, references/, assets/ belong there",
    );
    expect(await make("b-skill", "---\nname: other\ndescription: Does b.\n---\nbody\n")).toContain('name "other" differs from its folder "b-skill"');
    expect(await make("c-skill", "---\nname: c-skill\ndescription: Notes: quick\n---\nbody\n")).toMatch(/the frontmatter is not valid YAML .*quote a value that contains ": "/);
    expect(await make("d-skill", '---\nname: d-skill\ndescription: d thing.\nmetadata: {"nanobot":{"requires":{"bins":"gh"}}}\n---\nbody\n')).toContain("metadata.nanobot.requires.bins must be a list of names");
    expect(await make("Bad_Name", "---\nname: Bad_Name\ndescription: x thing.\n---\nbody\n")).toContain("must be lowercase letters, digits and single hyphens");
  });

  it("package refuses a symbolic link and leaves no archive", async () => {
    const work = await tempDir();
    const dir = join(work, "linky");
    await mkdir(join(dir, "scripts"), { recursive: true });
    await writeFile(join(dir, "SKILL.md"), "---\nname: linky\ndescription: Has a link inside.\n---\nbody\n");
    await writeFile(join(work, "outside.txt"), "secret");
    await symlink(join(work, "outside.txt"), join(dir, "scripts", "link.txt"));
    const r = await node(script("skill-creator", "package-skill.mjs"), [dir, join(work, "dist")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("scripts/link.txt is a symbolic link");
    expect(existsSync(join(work, "dist", "linky.skill"))).toBe(false);
  });

  it("clawhub: searches, installs by URL (one top folder), refuses to overwrite without --force, and refuses unsafe or skill-less archives", async () => {
    const skillZip = (md: string, top = "") => zipSync({ [`${top}SKILL.md`]: new TextEncoder().encode(md) });
    const url = await registry({
      "web-scrape": skillZip("---\nname: web-scrape\ndescription: Scrape pages v1.\n---\nv1\n"),
      "web-scrape-2": skillZip("---\nname: web-scrape\ndescription: Scrape pages v2.\n---\nv2\n", "web-scrape/"),
      evil: zipSync({ "SKILL.md": new TextEncoder().encode("---\nname: evil\n---\n"), "../../escape.txt": new TextEncoder().encode("x") }),
      empty: zipSync({ "notes.txt": new TextEncoder().encode("no skill here") }),
      // 60 MB of zeros packs into a few kB: refused from the archive's directory, before unpacking.
      bomb: zipSync({ "SKILL.md": new TextEncoder().encode("---\nname: bomb\n---\n"), "big.bin": new Uint8Array(60 * 1024 * 1024) }, { level: 9 }),
    });
    const ws = await tempDir();
    const hub = (...args: string[]) => node(script("clawhub", "clawhub.mjs"), [...args, "--registry", url, "--workdir", ws]);

    const found = await hub("search", "web", "--limit", "5");
    expect(found.stdout).toBe("web-scrape (1.0.0)  The web-scrape skill.\nweb-scrape-2 (1.0.0)  The web-scrape-2 skill.\n");

    expect((await hub("install", "web-scrape")).code).toBe(0);
    expect(await readFile(join(ws, "skills", "web-scrape", "SKILL.md"), "utf8")).toContain("v1");
    const again = await hub("install", `${url}/files/web-scrape-2`);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`error: ${join(ws, "skills", "web-scrape")} already exists; add --force to replace it\n`);
    const forced = await node(script("clawhub", "clawhub.mjs"), ["install", `${url}/files/web-scrape-2`, "--force", "--workdir", ws]);
    expect(forced.stderr).toBe("");
    expect(await readFile(join(ws, "skills", "web-scrape", "SKILL.md"), "utf8")).toContain("v2");

    const evil = await hub("install", "evil");
    expect(evil.stderr).toContain('the archive has an unsafe path "../../escape.txt"');
    expect(existsSync(join(ws, "skills", "evil"))).toBe(false);
    expect((await hub("install", "empty")).stderr).toContain("the archive has no SKILL.md at its root");
    expect((await hub("install", "bomb")).stderr).toContain("the archive unpacks to over 50 MB; not a skill");
    const missing = await hub("install", "nope");
    expect(missing.stderr).toBe(`error: ${url}/api/v1/download?slug=nope answered 404: Skill not found\n`);
    expect(await readdir(join(ws, "skills"))).toEqual(["web-scrape"]);

    expect((await hub("list")).stdout).toBe("web-scrape  Scrape pages v2.\n");
    const bad = await hub("install");
    expect([bad.code, bad.stderr.split("\n")[0]]).toEqual([2, "error: install takes one slug or URL: node clawhub.mjs install <slug>"]);
  });
});

const TMUX = findOnPath("tmux", process.env.PATH);

// tmux is installed on this project's machines (the env lists it); elsewhere these are skipped.
describe.skipIf(!TMUX)("tmux helper scripts against a real tmux server", () => {
  const tempDir = useTempDirs();
  const sockets: string[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) await run("tmux", ["-S", s, "kill-server"]);
  });

  it("find-sessions lists the sessions of a socket (and of every socket in the folder); wait-for-text waits for output and times out with the pane's last lines", async () => {
    const dir = await tempDir();
    const socket = join(dir, "troupe.sock");
    sockets.push(socket);
    expect((await run("tmux", ["-S", socket, "new-session", "-d", "-s", "work", "-x", "120", "-y", "30"])).code).toBe(0);
    expect((await run("tmux", ["-S", socket, "new-session", "-d", "-s", "other"])).code).toBe(0);

    const listed = await run("bash", [script("tmux", "find-sessions.sh"), "-S", socket]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^sessions on ${socket}:\\n  other \\(detached, started .+\\)\\n  work \\(detached, started .+\\)\\n$`));
    expect((await run("bash", [script("tmux", "find-sessions.sh"), "-S", socket, "-q", "WOR"])).stdout).not.toContain("other");
    const all = await run("bash", [script("tmux", "find-sessions.sh"), "-A"], { env: { TROUPE_TMUX_SOCKET_DIR: dir } });
    expect(all.stdout).toContain(`sessions on ${socket}:`);
    const none = await run("bash", [script("tmux", "find-sessions.sh"), "-S", join(dir, "nobody.sock")]);
    expect([none.code, none.stdout]).toEqual([1, `no tmux server on ${join(dir, "nobody.sock")}\n`]);

    const waiting = run("bash", [script("tmux", "wait-for-text.sh"), "-S", socket, "-t", "work", "-p", "DONE-[0-9]+", "-T", "30", "-i", "0.1"]);
    await run("tmux", ["-S", socket, "send-keys", "-t", "work", "-l", "--", "echo DONE-$((40+2))"]);
    await run("tmux", ["-S", socket, "send-keys", "-t", "work", "Enter"]);
    expect((await waiting).code).toBe(0);
    const fixed = await run("bash", [script("tmux", "wait-for-text.sh"), "-S", socket, "-t", "work", "-p", "DONE-42", "-F", "-T", "5"]);
    expect(fixed.code).toBe(0);

    const late = await run("bash", [script("tmux", "wait-for-text.sh"), "-S", socket, "-t", "work", "-p", "never-shown", "-T", "1", "-i", "0.2"]);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain('"never-shown" did not show in work within 1s; its last lines:');
    expect(late.stderr).toContain("DONE-42");
    const gone = await run("bash", [script("tmux", "wait-for-text.sh"), "-S", socket, "-t", "missing", "-p", "x"]);
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringContaining("cannot read pane missing")]);
    const usage = await run("bash", [script("tmux", "wait-for-text.sh"), "-t", "work"]);
    expect([usage.code, usage.stderr]).toEqual([2, "wait-for-text.sh: -t target and -p pattern are both required (see --help)\n"]);
  });
});
