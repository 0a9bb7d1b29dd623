import type { LookupAddress } from "node:dns";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { execTool } from "../../src/tools/builtin/exec.js";
import {
  compileAllowPatterns,
  compilePatterns,
  DEFAULT_DENY_PATTERNS,
  internalUrlRefusal,
  pathsIn,
  refusalOf,
  type ExecPolicy,
} from "../../src/tools/builtin/exec-guard.js";
import { commandSegments, topLevelSegments } from "../../src/tools/builtin/shell-parse.js";
import { createSsrfGuard, type Resolver } from "../../src/tools/ssrf.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

// The cases of nanobot's tests/tools/test_exec_allow_patterns.py and test_exec_security.py, and of
// tests/security/test_security_network.py's command scanning, against troupe's guard.

const policy = (over: Partial<ExecPolicy> & { allowPatterns?: string[]; denyPatterns?: string[] } = {}): ExecPolicy => {
  const { allowPatterns = [], denyPatterns = [], ...rest } = over;
  return {
    deny: compilePatterns([...DEFAULT_DENY_PATTERNS, ...denyPatterns]),
    allow: compileAllowPatterns(allowPatterns),
    restrict: false,
    roots: [],
    ...rest,
  };
};
const guard = (command: string, over: Parameters<typeof policy>[0] = {}, cwd = "/tmp") => refusalOf(command, cwd, policy(over));

describe("exec allow patterns (nanobot's test_exec_allow_patterns)", () => {
  it("deny patterns refuse rm -rf; a matching allow pattern lets it through, a non-matching one does not", () => {
    expect(guard("rm -rf /tmp/build")).toMatch(/deny pattern/);
    expect(guard("rm -rf /tmp/build", { allowPatterns: [String.raw`rm\s+-rf\s+/tmp/.*`] })).toBeUndefined();
    expect(guard("rm -rf /tmp/build", { allowPatterns: [String.raw`rm\s+-rf\s+/opt/`] })).toMatch(/deny pattern/);
    expect(guard("rm -rf /tmp/build", { allowPatterns: [String.raw`rm\s+-rf\s+/tmp/build`] })).toBeUndefined();
  });

  it("adds configured deny patterns to the built-in ones, and allow patterns lift those too", () => {
    expect(guard("ping example.com", { denyPatterns: [String.raw`\bping\b`] })).toMatch(/deny pattern/);
    expect(guard("rm -rf /tmp/x", { denyPatterns: [String.raw`\bping\b`] })).toMatch(/deny pattern/);
    expect(guard("ping example.com", { denyPatterns: [String.raw`\bping\b`], allowPatterns: [String.raw`\bping\s+example\.com\b`] })).toBeUndefined();
  });

  it("is a whitelist: with allow patterns, anything else is refused", () => {
    expect(guard("echo hello", { allowPatterns: [String.raw`echo\s+hello`] })).toBeUndefined();
    expect(guard("ls /tmp", { allowPatterns: [String.raw`echo\s+hello`] })).toMatch(/matches none of tools\.exec\.allowPatterns/);
  });

  it.each([
    ["echo allowlisted && touch /tmp/evil", String.raw`\becho\s+allowlisted\b`],
    ["echo allowlisted & touch /tmp/evil", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted\ntouch /tmp/evil", String.raw`echo\s+allowlisted\s*.*`],
    ["echo allowlisted; touch /tmp/evil", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted || touch /tmp/evil", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted | tee /tmp/evil", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted $(touch /tmp/evil)", String.raw`echo\s+allowlisted.*`],
    ['echo "allowlisted $(touch /tmp/evil)"', String.raw`echo\s+.*`],
    [`echo "it's $(touch /tmp/evil)"`, String.raw`echo\s+.*`],
    [`echo "it's \`touch /tmp/evil\`"`, String.raw`echo\s+.*`],
    ["echo $'\\'' ; touch /tmp/evil", String.raw`echo\s+.*`],
    ["echo $'\\'' $(touch /tmp/evil)", String.raw`echo\s+.*`],
    ["echo allowlisted `touch /tmp/evil`", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted <(touch /tmp/evil)", String.raw`echo\s+allowlisted.*`],
    ["echo allowlisted &", String.raw`echo\s+allowlisted`],
  ])("refuses %j when only echo is allowed: every command of the line must match", (command, pattern) => {
    expect(guard(command, { allowPatterns: [pattern] })).toMatch(/matches none of tools\.exec\.allowPatterns/);
  });

  it("still applies the deny list to a later line when only the first is allowed", () => {
    expect(guard("echo allowlisted\nrm -rf /", { allowPatterns: [String.raw`echo\s+allowlisted\s*.*`] })).toMatch(/deny pattern/);
    expect(guard('echo "#"; rm -rf /', { denyPatterns: [String.raw`\brm\s+-rf\s+/`] })).toMatch(/deny pattern/);
  });

  it("allows a line whose every command matches, keeps 2>&1 with its command, and takes ^…$ patterns", () => {
    expect(guard("echo allowlisted", { allowPatterns: [String.raw`\becho\s+allowlisted\b`] })).toBeUndefined();
    expect(guard("echo allowlisted && echo also_allowed", { allowPatterns: [String.raw`\becho\s+allowlisted\b`, String.raw`\becho\s+also_allowed\b`] })).toBeUndefined();
    expect(guard("echo allowlisted 2>&1", { allowPatterns: [String.raw`echo\s+allowlisted\s+2>&1`] })).toBeUndefined();
    expect(guard("echo allowlisted", { allowPatterns: [String.raw`^echo\s+allowlisted$`] })).toBeUndefined();
    expect(guard("git status && git log -1 | cat", { allowPatterns: [String.raw`git\s+.*`, "cat"] })).toBeUndefined();
  });

  it("splits as a shell does: a backslash-newline continues one command, quotes and groups hold operators", () => {
    expect(topLevelSegments("echo allowlisted \\\nextra")).toEqual(["echo allowlisted \\\nextra"]);
    expect(topLevelSegments("echo 'a && b' \"c; d\" && (cd x && make) | tail -1")).toEqual(["echo 'a && b' \"c; d\"", "(cd x && make)", "tail -1"]);
    expect(topLevelSegments("cmd >x 2>&1 &>y")).toEqual(["cmd >x 2>&1 &>y"]);
    expect(commandSegments('echo "$(date) $(whoami | tr a b)" `id`')).toEqual(['echo "$(date) $(whoami | tr a b)" `id`', "date", "whoami", "tr a b", "id"]);
    expect(commandSegments("echo '$(not run)'")).toEqual(["echo '$(not run)'"]);
    expect(commandSegments(`echo "it's $(date)" 'a "$(no)"'`)).toEqual([`echo "it's $(date)" 'a "$(no)"'`, "date"]);
    expect(commandSegments("echo $'a\\'b;c' ; id")).toEqual(["echo $'a\\'b;c'", "id"]);
  });
});

describe("exec deny patterns (nanobot's test_exec_security)", () => {
  it.each([
    "cat foo >> history.jsonl",
    "echo '{}' > history.jsonl",
    "echo '{}' > memory/history.jsonl",
    "echo '{}' > ./workspace/memory/history.jsonl",
    "tee -a history.jsonl < foo",
    "tee history.jsonl",
    "cp /tmp/fake.jsonl history.jsonl",
    "mv backup.jsonl memory/history.jsonl",
    "dd if=/dev/zero of=memory/history.jsonl",
    "sed -i 's/old/new/' history.jsonl",
    "echo x > .dream_cursor",
    "cp /tmp/x memory/.dream_cursor",
    // The workspace's hooks/ (modules troupe runs outside the sandbox) is written by a person only.
    "echo 'export default {}' > hooks/evil.mjs",
    "echo x >hooks/a.js",
    "cat payload >> ./hooks/sign.mjs",
    "tee hooks/evil.mjs < payload",
    "cp /tmp/evil.mjs hooks/",
    "mv evil.mjs /home/me/.troupe/workspace/hooks/evil.mjs",
    "sed -i 's/a/b/' hooks/sign.mjs",
    "format C: /q",
    "format D: /fs:ntfs",
    "&& format",
    "| format",
    "&format",
    ";format",
    "|format",
  ])("refuses %j", (command) => {
    expect(guard(command)).toMatch(/deny pattern/);
  });

  it.each([
    "cat history.jsonl",
    "cat hooks/sign.mjs",
    "ls hooks/",
    "echo x > myhooks/a.mjs",
    "wc -l history.jsonl",
    "tail -n 5 history.jsonl",
    "grep foo history.jsonl",
    "cp history.jsonl /tmp/history.backup",
    "ls memory/",
    "echo history.jsonl",
    // A URL's &format= parameter is not the Windows format command.
    'curl -s "wttr.in/xxx?lang=zh&format=%l:+%c+%t+%h+%w&1"',
    'curl -s "wttr.in/xxx?format=%l:+%c+%t+%h+%w&1"',
    "echo format",
    "echo reformat",
  ])("lets %j through", (command) => {
    expect(guard(command)).toBeUndefined();
  });
});

describe("exec under restrictToWorkspace (nanobot's test_exec_security)", () => {
  const tmp = useTempDirs();
  async function layout() {
    const root = await tmp();
    const ws = join(root, "workspace");
    const outside = join(root, "outside");
    await mkdir(ws, { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, "secret.txt"), "secret");
    const restricted = (command: string, cwd = ws, over: Partial<ExecPolicy> = {}) => refusalOf(command, cwd, policy({ restrict: true, roots: [ws], ...over }));
    return { root, ws, outside, restricted };
  }

  it.each([
    'rm test_print.txt 2>/dev/null; echo "done"',
    "find . -type f >/dev/null",
    "noisy_cmd 2>/dev/null",
    "noisy_cmd >/dev/null 2>&1",
    "head -c 16 /dev/urandom | xxd",
    "echo done >/dev/stderr",
    "echo line </dev/stdin",
    "cat /dev/fd/3",
    "echo x > /dev/full",
  ])("lets the harmless device file in %j through", async (command) => {
    const { restricted } = await layout();
    expect(restricted(command)).toBeUndefined();
  });

  it("refuses redirects and paths outside, by any spelling", async () => {
    const { outside, restricted } = await layout();
    const key = join(outside, "key.pem");
    for (const command of [
      "echo pwn > /etc/issue",
      `cat<${key}`,
      `cat <${key}`,
      `(${key})`,
      `cat {${key}}`,
      "cat //etc/passwd",
      "cat ///etc/passwd",
      'cat "/etc/passwd',
      "x=${y:-/etc/passwd}; cat $x",
      "PATH=/opt/evil:$PATH make",
    ]) {
      expect(restricted(command), command).toMatch(/is outside the workspace/);
    }
  });

  it("allows workspace paths from a subdirectory, refuses paths beside the workspace", async () => {
    const { ws, outside, restricted } = await layout();
    await mkdir(join(ws, "notes"));
    await mkdir(join(ws, "other_project"));
    expect(restricted(`git clone ${join(ws, "other_project")}`, join(ws, "notes"))).toBeUndefined();
    expect(restricted(`cat ${join(outside, "key.pem")}`, join(ws, "notes"))).toMatch(/is outside the workspace/);
  });

  it("follows symlinks named inside quotes, $(…) and sh -c scripts, with shell punctuation in the name", async () => {
    const { ws, outside, restricted } = await layout();
    await symlink(outside, join(ws, "linked)dir"));
    await symlink(outside, join(ws, "secret-link"));
    const paren = join(ws, "linked)dir");
    const link = join(ws, "secret-link");
    for (const command of [
      `cat "${paren}/secret.txt"`,
      `cat ${paren.replace(")", "\\)")}/secret.txt`,
      `cat "$(printf %s ${link})"`,
      `curl "$(printf file://${link})"`,
      `sh -c "x=${link};cat \\"$x\\""`,
    ]) {
      expect(restricted(command), command).toMatch(/is outside the workspace/);
    }
    expect(pathsIn(`cat "${paren}/secret.txt"`)).toContain(`${paren}/secret.txt`);
  });

  it("keeps quoted paths with punctuation that stay inside", async () => {
    const { ws, restricted } = await layout();
    const inside = join(ws, "linked)dir", "file.txt");
    await mkdir(join(ws, "linked)dir"));
    await writeFile(inside, "safe");
    expect(restricted(`cat "${inside}"`)).toBeUndefined();
    await mkdir(join(ws, "linked;dir"));
    await writeFile(join(ws, "linked;dir", "file.txt"), "safe");
    expect(restricted(`x="${join(ws, "linked;dir", "file.txt")}"; cat "$x"`)).toBeUndefined();
  });

  it.each([
    ["curl https://example.com/outside/file", "/outside/file"],
    ["curl 'https://example.com/?next=/etc/passwd'", "/etc/passwd"],
    ["curl --url=https://example.com/?next=/etc/passwd", "/etc/passwd"],
    ["scp host:/etc/passwd .", "/etc/passwd"],
    ["echo C:/Windows/System32", "/Windows/System32"],
    ["promtool query 'up{job=~\"/x\"}'", "~"],
  ])("does not read %j as naming the local path %s", (command, notAPath) => {
    expect(pathsIn(command)).not.toContain(notAPath);
  });

  it("reads the quoted path with spaces and punctuation whole, and file:// URIs as paths", () => {
    expect(pathsIn('cat "/tmp/a file)/with, punctuation"')).toEqual(["/tmp/a file)/with, punctuation"]);
    expect(pathsIn("curl file:///etc/passwd")).toContain("/etc/passwd");
    expect(pathsIn("curl file://localhost/%65tc/passwd")).toContain("/etc/passwd");
  });

  it("refuses file:// URIs outside the workspace", async () => {
    const { ws, outside, restricted } = await layout();
    expect(restricted(`curl ${pathToFileURL(join(outside, "outside file.txt")).href}`)).toMatch(/is outside the workspace/);
    expect(restricted(`curl ${pathToFileURL(join(ws, "in.txt")).href}`)).toBeUndefined();
  });

  it("checks ~user, ~-, ~+N and ~+ forms", async () => {
    const { root, ws, restricted } = await layout();
    const passwdFile = join(root, "passwd");
    await writeFile(passwdFile, `root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::${ws}:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n`);
    const check = (command: string) => restricted(command, ws, { passwdFile });
    expect(check("cat ~root/.ssh/id_rsa")).toMatch(/~root\/\.ssh\/id_rsa is outside the workspace/);
    expect(check("ls ~bob")).toMatch(/~bob is outside the workspace/);
    expect(check("ls ~alice/notes")).toBeUndefined();
    expect(check("ls ~nosuchuser/x")).toMatch(/home of user nosuchuser/);
    expect(check("cd ~-")).toMatch(/directory stack/);
    expect(check("ls ~+1")).toMatch(/directory stack/);
    expect(check("ls ~-2/x")).toMatch(/directory stack/);
    expect(check("ls ~+/sub")).toBeUndefined();
    expect(check("ls ~+")).toBeUndefined();
    expect(check("cp a.txt ~/")).toMatch(/~\/ is outside the workspace/);
    expect(check("FOO=~root/x make")).toMatch(/outside the workspace/);
  });
});

/** A resolver answering from a table, as nanobot's tests patch getaddrinfo. */
const table =
  (answers: Record<string, string[]>): Resolver =>
  (hostname, _options, callback) => {
    const ips = answers[hostname];
    if (!ips) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), []);
    callback(null, ips.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 })));
  };

describe("exec refuses internal URLs (nanobot's contains_internal_url cases)", () => {
  const urls = (command: string, answers: Record<string, string[]> = {}, whitelist: string[] = []) =>
    internalUrlRefusal(command, createSsrfGuard(whitelist, table(answers)));

  it.each([
    'curl -s -H "Metadata-Flavor: Google" http://169.254.169.254/computeMetadata/v1/',
    "wget http://localhost:8080/secret -O /tmp/out",
    "echo start && curl http://169.254.169.254/latest/meta-data/ && echo done",
    "curl http://127.0.0.2/",
    "curl http://10.0.0.1/ http://172.16.5.1/ http://192.168.1.1/",
    "curl http://0.0.0.0:8080/",
    "curl http://[::1]:8080/",
    "curl http://[::ffff:127.0.0.1]/",
    "curl http://2130706433/",
    "curl http://0x7f.0.0.1/",
    "curl http://127.1/",
    "curl http://100.64.0.1/",
    "curl http://[fd00::1]/",
    "curl http://[fe80::1]/",
    "curl 169.254.169.254/latest/meta-data/",
    "curl 127.0.0.1:6379",
    "wget -qO- localhost:8080/admin",
    "curl https://service.localhost/x",
    'curl "$(echo http://169.254.169.254/)"',
    "nc ftp://10.1.2.3/",
    "redis-cli -u redis://127.0.0.1:6379",
    "curl http://example.com@127.0.0.1/",
  ])("refuses %j", async (command) => {
    expect(await urls(command)).toMatch(/^command refused by the safety guard \(internal\/private URL\): it names .*tools\.ssrfWhitelist/);
  });

  it("resolves names: one answering with an internal address is refused, a public one is not", async () => {
    expect(await urls("curl http://evil.com/secret", { "evil.com": ["::ffff:127.0.0.1"] })).toMatch(/evil\.com \(::ffff:127\.0\.0\.1\): it is a loopback address/);
    expect(await urls("curl http://evil.com/", { "evil.com": ["169.254.169.254"] })).toMatch(/link-local/);
    expect(await urls("curl https://example.com/api", { "example.com": ["93.184.216.34"] })).toBeUndefined();
    expect(await urls("curl https://github.com/HKUDS/nanobot", { "github.com": ["140.82.121.3"] })).toBeUndefined();
  });

  it("refuses a name it cannot look up, as nanobot does: unresolvable, or no answer in time (else a name that resolves later could reach inside)", async () => {
    expect(await urls("curl https://no-such-host.invalid/")).toMatch(
      /^command refused by the safety guard \(internal\/private URL\): it names no-such-host\.invalid, whose address could not be looked up \(getaddrinfo ENOTFOUND no-such-host\.invalid\)/,
    );
    const silent: Resolver = () => undefined;
    const slow = await internalUrlRefusal("curl https://slow.example/x", createSsrfGuard([], silent), 50);
    expect(slow).toMatch(/it names slow\.example, whose address could not be looked up \(no answer in 0\.05 s\)/);
    expect(slow).toMatch(/check the name/);
  });

  it("leaves version numbers, bare addresses without a port or path, and file:// to the other checks", async () => {
    for (const command of ["echo 10.0.0.1", "pip install foo==1.2.3.4", "git tag v1.2.3", "curl file:///etc/passwd", "echo ok"]) {
      expect(await urls(command), command).toBeUndefined();
    }
  });

  it("honours tools.ssrfWhitelist", async () => {
    expect(await urls("curl http://100.100.1.2/status", {}, ["100.64.0.0/10"])).toBeUndefined();
    expect(await urls("curl http://localhost:8080/", {}, ["127.0.0.1"])).toBeUndefined();
    expect(await urls("curl http://169.254.169.254/", {}, ["100.64.0.0/10"])).toMatch(/link-local/);
  });

  it("is refused by the exec tool before anything runs", async () => {
    const tmp = await import("node:fs/promises").then((fs) => fs.mkdtemp("/tmp/troupe-test-"));
    try {
      const tool = execTool({
        sandbox: sandboxOf(tmp),
        policy: policy({ restrict: true, roots: [tmp] }),
        defaultTimeout: 60,
        pathAppend: "",
        allowedEnvKeys: [],
        isolation: { kind: "none" },
        urlGuard: createSsrfGuard([], table({})),
      });
      const run = runner([tool], tmp);
      expect(await run("exec", { command: "touch ran && curl -s http://169.254.169.254/latest/meta-data/" })).toMatch(/^Error: command refused by the safety guard \(internal\/private URL\)/);
      expect(await run("exec", { command: "ls ran" })).toMatch(/No such file/);
      expect(await run("exec", { command: "echo hello" })).toBe("hello\n\nExit code: 0");
    } finally {
      await import("node:fs/promises").then((fs) => fs.rm(tmp, { recursive: true, force: true }));
    }
  });
});

const guardUrls = (command: string, answers: Record<string, string[]> = {}, whitelist: string[] = []) =>
  internalUrlRefusal(command, createSsrfGuard(whitelist, table(answers)));

describe("exec guard: non-http schemes whose 'host' is no DNS name (nanobot scans http(s) only)", () => {
  it.each([
    "aws s3 cp s3://my-reports/2026/q3.csv .",
    "gsutil ls gs://my-bucket/logs/",
    "python -c \"import datasets; datasets.load_dataset('hf://datasets/org/name')\"",
    "echo 'DATABASE_URL=postgres://app:pw@db:5432/app' >> .env",
  ])("%s is let through", async (command) => {
    expect(await guardUrls(command)).toBeUndefined();
  });
});

describe("exec guard: legit addresses still pass", () => {
  it.each([
    ["curl http://1.1.1.1:8080/x", {}, []],
    ["curl http://[2606:4700::1111]:443/", {}, []],
    ["curl https://example.com:8443/a", { "example.com": ["93.184.216.34"] }, []],
    ["curl http://localhost:8080/", {}, ["127.0.0.1"]],
    ["curl http://localhost:8080/", {}, ["127.0.0.0/8"]],
    ["curl 1.1.1.1", {}, []],
    // A plain small number after a network client is an option's value or a port, not an address
    // (a URL parser reads "5" as 0.0.0.5); nanobot scans only http(s) URLs, so all of these run there.
    ["curl -s -m 5 https://1.1.1.1/", {}, []],
    ["curl --retry 3 https://1.1.1.1/", {}, []],
    ["wget -T 10 https://1.1.1.1/", {}, []],
    ["nc -z 1.1.1.1 443", {}, []],
    ["curl --max-filesize 16777215 https://1.1.1.1/", {}, []],
  ] as Array<[string, Record<string, string[]>, string[]]>)("%s", async (command, answers, whitelist) => {
    expect(await guardUrls(command, answers, whitelist)).toBeUndefined();
  });
});

describe("exec guard: bare internal addresses after a network client", () => {
  it.each([
    "curl 127.1:8080/x",
    "curl 0x7f000001:80/",
    "curl 2130706433:80/",
    "curl localhost",
    "curl 169.254.169.254",
    "curl -H x http://0177.0.0.1/",
    // A whole IPv4 address in decimal (≥ 2^24) is still one: 127.0.0.1, 169.254.169.254, 10.0.0.1.
    "curl 2130706433",
    "curl -m 5 2852039166",
    "wget -T 10 167772161",
    "curl 0x7f000001",
    "nc -z 127.0.0.1 443",
    "nc -z 127.1 6379",
    "curl -s -m 5 169.254.169.254",
  ])("%s is refused", async (command) => {
    expect(await guardUrls(command)).toMatch(/refused/);
  });
});
