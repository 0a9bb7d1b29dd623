import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { parseFrontmatter, simpleFields } from "../../src/context/frontmatter.js";
import { BUILTIN_SKILLS_DIR } from "../../src/context/templates.js";
import { buildSystemPrompt } from "../../src/context/prompt.js";
import { loadSkills, mentionedSkills, readSkill, withMentionedSkills, type Skill } from "../../src/context/skills.js";
import { useTempDirs } from "../helpers/tmp.js";

/** A skill read from text as if it were <ws>/skills/<folder>/SKILL.md, on a machine with no binaries and only `env`. */
const skill = (text: string, folder = "demo", env: NodeJS.ProcessEnv = { PATH: "" }): Skill => readSkill(text, folder, `/ws/skills/${folder}/SKILL.md`, "workspace", env);

describe("skills: requirements in metadata (nanobot and OpenClaw formats)", () => {
  it.each([
    ["nanobot key, JSON string", `---\nname: github\ndescription: GitHub via gh.\nmetadata: {"nanobot":{"emoji":"🐙","requires":{"bins":["gh"]}}}\n---\nUse gh.`],
    ["openclaw key, JSON string", `---\nname: github\ndescription: GitHub via gh.\nmetadata: '{"openclaw":{"requires":{"bins":["gh"]}}}'\n---\nUse gh.`],
    ["nanobot key, YAML mapping", `---\nname: github\ndescription: GitHub via gh.\nmetadata:\n  nanobot:\n    requires:\n      bins: [gh]\n---\nUse gh.`],
    ["openclaw key, YAML mapping", `---\nname: github\ndescription: GitHub via gh.\nmetadata:\n  openclaw:\n    requires:\n      bins:\n        - gh\n---\nUse gh.`],
  ])("reads requires.bins from metadata: %s", (_label, text) => {
    const s = skill(text, "github");
    expect(s.missing).toEqual(["CLI: gh"]);
    expect(s.broken).toEqual([]);
    expect(s.description).toBe("GitHub via gh.");
  });

  it("reads OpenClaw's own layout: metadata as a multi-line flow mapping with trailing commas and an install list", () => {
    const text = [
      "---",
      "name: github",
      'description: "Interact with GitHub using the `gh` CLI. Use `gh issue`, `gh pr` and `gh api`."',
      "metadata:",
      "  {",
      '    "openclaw":',
      "      {",
      '        "emoji": "🐙",',
      '        "requires": { "bins": ["gh"], "env": ["GH_TOKEN"] },',
      '        "always": true,',
      '        "install": [{ "id": "brew", "kind": "brew", "formula": "gh", "bins": ["gh"], "label": "Install GitHub CLI (brew)" },],',
      "      },",
      "  }",
      "---",
      "",
      "# GitHub Skill",
    ].join("\n");
    const s = skill(text, "github");
    expect([s.missing, s.broken, s.warnings, s.always, s.body]).toEqual([["CLI: gh", "ENV: GH_TOKEN"], [], [], true, "# GitHub Skill"]);
    expect(s.description).toBe("Interact with GitHub using the `gh` CLI. Use `gh issue`, `gh pr` and `gh api`.");
  });

  it("says which variable is missing, and nothing once it is set", () => {
    const text = `---\ndescription: Notion.\nmetadata: {"openclaw":{"requires":{"env":["NOTION_API_KEY"]}}}\n---\nbody`;
    expect(skill(text).missing).toEqual(["ENV: NOTION_API_KEY"]);
    expect(skill(text, "demo", { PATH: "", NOTION_API_KEY: "k" }).missing).toEqual([]);
  });

  it("prefers the nanobot key over the openclaw key, as nanobot does", () => {
    const text = `---\ndescription: d\nmetadata: {"nanobot":{"requires":{"env":["A_VAR"]}},"openclaw":{"requires":{"env":["B_VAR"]}}}\n---\n`;
    expect(skill(text).missing).toEqual(["ENV: A_VAR"]);
  });

  it("skips null and empty requirement entries, as nanobot does (they name nothing)", () => {
    const nulls = skill(`---\ndescription: d\nmetadata: {"nanobot":{"always":true,"requires":{"bins":[null,""],"env":[null]}}}\n---\nbody`);
    expect([nulls.missing, nulls.broken, nulls.always]).toEqual([[], [], true]);
    const nullLists = skill(`---\ndescription: d\nmetadata: {"openclaw":{"requires":{"bins":null,"env":null}}}\n---\nbody`);
    expect([nullLists.missing, nullLists.broken]).toEqual([[], []]);
    expect(skill(`---\ndescription: d\nmetadata: {"nanobot":{"requires":null}}\n---\n`).broken).toEqual([]);
  });

  it("also reads requires at the top level (nanobot ignores it; troupe does not)", () => {
    expect(skill(`---\ndescription: d\nrequires:\n  bins: [gh]\n---\n`).missing).toEqual(["CLI: gh"]);
  });

  it("reads always from metadata and from the top level", () => {
    expect(skill(`---\ndescription: d\nmetadata: {"openclaw":{"always":true}}\n---\nbody`).always).toBe(true);
    expect(skill(`---\ndescription: d\nmetadata:\n  nanobot:\n    always: true\n---\nbody`).always).toBe(true);
    expect(skill(`---\ndescription: d\nalways: true\n---\nbody`).always).toBe(true);
    expect(skill(`---\ndescription: d\n---\nbody`).always).toBe(false);
  });
});

describe("skills: malformed files never break a turn", () => {
  it.each([
    ["bins: gh (a string)", "requires:\n  bins: gh", /requires\.bins must be a list of names, not the text "gh" \(write \[gh\]\)/],
    ["env: 3 (a number)", 'metadata: {"nanobot":{"requires":{"env":3}}}', /metadata requires\.env must be a list of names, not a number/],
    ["requires: a list", "requires: [gh]", /requires must be a mapping/],
    ["bins with a mapping inside", "requires:\n  bins: [{name: gh}]", /non-text items/],
  ])("lists %s as broken with the reason", async (_label, yaml, reason) => {
    const s = skill(`---\ndescription: d\n${yaml}\n---\nbody`);
    expect(s.broken.join("; ")).toMatch(reason);
    const prompt = await buildSystemPrompt({ workspace: "/ws", skills: [s], restrictToWorkspace: true });
    expect(prompt).toContain("- **demo** — d (broken: ");
  });

  it("keeps a broken always-skill out of the active skills", async () => {
    const s = skill(`---\ndescription: d\nalways: true\nrequires:\n  bins: gh\n---\nSECRET BODY`);
    const prompt = await buildSystemPrompt({ workspace: "/ws", skills: [s], restrictToWorkspace: true });
    expect(prompt).not.toContain("SECRET BODY");
  });
});

describe("skills: names, descriptions and frontmatter recovery", () => {
  it("is named after its folder; a different frontmatter name is a warning", () => {
    const s = skill(`---\nname: clawhub\ndescription: Poly markets.\n---\n`, "poly");
    expect(s.name).toBe("poly");
    expect(s.warnings).toEqual(['/ws/skills/poly/SKILL.md: its frontmatter name "clawhub" differs from its folder; the skill is named "poly" after the folder']);
    expect(skill(`---\nname: poly\ndescription: d\n---\n`, "poly").warnings).toEqual([]);
  });

  it("recovers fields line by line from YAML that does not parse (an unquoted ': ' in the description), with one warning", () => {
    const text = `---\nname: notes\ndescription: Take notes: quick ones, long ones\nmetadata: {"nanobot":{"requires":{"bins":["jq"]}}}\n---\n# Notes\nbody`;
    const s = skill(text, "notes");
    expect(s.description).toBe("Take notes: quick ones, long ones");
    expect(s.missing).toEqual(["CLI: jq"]);
    expect(s.warnings).toHaveLength(1);
    expect(s.warnings[0]).toMatch(/^\/ws\/skills\/notes\/SKILL\.md: the frontmatter is not valid YAML \(.+\); its fields were recovered line by line$/);
  });

  it("recovers quoted values, block scalars and nested mappings of a broken file", () => {
    const block = `name: x\ndescription: "A: b"\nbad: [unclosed\nlong: |\n  line one\n  line two\nfolded: >\n  a\n  b\nmetadata:\n  nanobot:\n    always: true`;
    const { fields, yamlError } = parseFrontmatter(`---\n${block}\n---\nbody`);
    expect(yamlError).toBeTruthy();
    expect(fields).toMatchObject({ name: "x", description: "A: b", long: "line one\nline two\n", folded: "a b\n", metadata: { nanobot: { always: true } } });
  });

  it("takes a description: | block as one line, without its trailing newline", () => {
    const s = skill(`---\nname: demo\ndescription: |\n  Does things.\n  Across lines.\n---\nbody`);
    expect(s.description).toBe("Does things. Across lines.");
  });

  it("without frontmatter: the body's first line is the description, with a warning; empty frontmatter falls back to the name", () => {
    const s = skill(`# Deploy helper\n\nRun the deploy.`, "deploy");
    expect([s.name, s.description]).toEqual(["deploy", "Deploy helper"]);
    expect(s.warnings[0]).toMatch(/has no frontmatter/);
    expect(skill(`---\n---\nbody`, "bare").description).toBe("bare");
    expect(skill(`---\nname: bare\n---\nbody`, "bare").description).toBe("bare");
  });

  it("reads CRLF files and a BOM", () => {
    const s = skill(`\uFEFF---\r\nname: demo\r\ndescription: Windows.\r\n---\r\nbody`);
    expect([s.description, s.body, s.warnings]).toEqual(["Windows.", "body", []]);
  });
});

describe("skills: loading, disabling and $skill-name", () => {
  const tempDir = useTempDirs();

  async function workspace(files: Record<string, string>): Promise<string> {
    const ws = await tempDir();
    for (const [folder, text] of Object.entries(files)) {
      await mkdir(join(ws, "skills", folder), { recursive: true });
      await writeFile(join(ws, "skills", folder, "SKILL.md"), text);
    }
    return ws;
  }

  it("leaves out agents.defaults.disabledSkills, by folder name, built-in ones included", async () => {
    const ws = await workspace({ weather: "---\ndescription: w\n---\n", poly: "---\nname: clawhub\ndescription: p\n---\n" });
    const names = (await loadSkills(ws, { PATH: "" }, { disabled: ["weather", "memory"] })).map((s) => s.name);
    expect(names).toContain("poly");
    expect(names).not.toContain("weather");
    expect(names).not.toContain("memory");
  });

  it("reports each warning once per process, however often the skills are read", async () => {
    const ws = await workspace({ broken: "---\ndescription: a: b: c\nrequires:\n  bins: gh\n---\n" });
    const seen: string[] = [];
    await loadSkills(ws, { PATH: "" }, { onWarning: (w) => seen.push(w) });
    await loadSkills(ws, { PATH: "" }, { onWarning: (w) => seen.push(w) });
    expect(seen.filter((w) => w.includes(join(ws, "skills", "broken")))).toHaveLength(2);
    expect(seen.some((w) => /not valid YAML/.test(w))).toBe(true);
    expect(seen.some((w) => /listed as broken/.test(w))).toBe(true);
  });

  it("finds $skill-name mentions of known skills only, and puts their full text before the message", () => {
    const skills = [skill("---\ndescription: w\n---\nWEATHER BODY", "weather"), skill("---\ndescription: g\nrequires:\n  bins: [gh]\n---\nGH BODY", "github")];
    expect(mentionedSkills("use $weather and ($github), not $5 or a$weather or $nope", skills).map((s) => s.name)).toEqual(["weather", "github"]);
    const text = withMentionedSkills("$weather in Paris?", skills);
    expect(text).toBe("[Skill: weather, loaded because the message names $weather]\nWEATHER BODY\n[/Skill: weather]\n\n$weather in Paris?");
    expect(withMentionedSkills("try $github", skills)).toContain("(unavailable: CLI: gh)");
    expect(withMentionedSkills("costs $5", skills)).toBe("costs $5");
  });

  it("matches $name as nanobot does: after punctuation or at a sentence's end, never inside a word or after another $", () => {
    const skills = [skill("---\ndescription: w\n---\nW", "weather"), skill("---\ndescription: x\n---\nX", "x"), skill("---\ndescription: s\n---\nS", "skill-creator")];
    const names = (text: string) => mentionedSkills(text, skills).map((s) => s.name);
    expect(names("Use $weather.")).toEqual(["weather"]);
    expect(names("see:$weather, then <$x>")).toEqual(["weather", "x"]);
    expect(names("make one with $skill-creator-")).toEqual(["skill-creator"]);
    expect(names("é$weather _$weather $$weather 5$x")).toEqual([]);
  });

  it("does not load an always-on skill a second time (it is in the system prompt), as nanobot", () => {
    const skills = [
      skill("---\ndescription: a\nmetadata: {\"nanobot\":{\"always\":true}}\n---\nALWAYS BODY", "always"),
      skill("---\ndescription: b\n---\nBETA BODY", "beta"),
    ];
    const text = withMentionedSkills("Use $beta, then $always, $beta again", skills);
    expect(text).not.toContain("ALWAYS BODY");
    expect(text.match(/BETA BODY/g)).toHaveLength(1);
  });
});

describe("skills: frontmatter read without the YAML parser", () => {
  const blockOf = (text: string) => /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1] ?? "";

  it("reads every built-in skill's frontmatter on the fast path, exactly as YAML reads it", async () => {
    const dirs = await readdir(BUILTIN_SKILLS_DIR);
    expect(dirs.length).toBeGreaterThan(3);
    for (const dir of dirs) {
      const block = blockOf(await readFile(join(BUILTIN_SKILLS_DIR, dir, "SKILL.md"), "utf8"));
      expect(simpleFields(block), dir).toBeDefined();
      expect(simpleFields(block), dir).toEqual(parseYaml(block));
    }
  });

  it.each([
    "name: a\ndescription: Plain words, commas, (parentheses) and 'quotes' inside.",
    'metadata: {"nanobot":{"emoji":"🦞","requires":{"bins":["node"]}}}',
    'description: "an escaped \\"quote\\" and \\u00e9"',
    "always: true\nflag: FALSE\nname: x",
    "name: yes\nother: on",
    "url: https://example.com/a?b=c",
    "name: a\n\ndescription: after a blank line",
  ])("takes simple frontmatter and agrees with YAML: %s", (block) => {
    expect(simpleFields(block)).toBeDefined();
    expect(simpleFields(block)).toEqual(parseYaml(block));
  });

  it.each([
    ["an unquoted colon", "description: Use it: for things"],
    ["a comment", "name: a # the name"],
    ["a number", "version: 1.0"],
    ["null", "name: null"],
    ["a tilde", "name: ~"],
    ["a single-quoted string", "name: 'a'"],
    ["a block scalar", "description: |\n  two\n  lines"],
    ["a nested mapping", "metadata:\n  nanobot: {}"],
    ["a list item", "- a"],
    ["an anchor", "name: &a x"],
    ["a tag", "name: !!str x"],
    ["broken JSON", 'metadata: {"nanobot": '],
    ["a duplicate key", "name: a\nname: b"],
    ["a date", "date: 2024-01-01"],
    ["a signed number", "n: -1"],
    ["a __proto__ key", '__proto__: {"always": true}'],
    ["a key YAML reads as null", "null: x"],
    ["a key YAML reads as a boolean", "True: x"],
    ["JSON with a repeated key", 'metadata: {"a": 1, "a": 2}'],
    ["nested JSON with a repeated key", 'metadata: {"nanobot": {"emoji": "x", "emoji": "y"}}'],
  ])("leaves anything else to YAML: %s", (_label, block) => {
    expect(simpleFields(block)).toBeUndefined();
  });

  it.each(["description: constructor", "name: toString", "name: hasOwnProperty", "name: __proto__", "description: valueOf"])(
    "reads a value named like an Object property as the plain string YAML reads: %s",
    (block) => {
      expect(simpleFields(block)).toEqual(parseYaml(block));
    },
  );

  it("never lets a __proto__ key make a skill always-loaded", () => {
    const fm = parseFrontmatter('---\nname: demo\n__proto__: {"always": true}\n---\nbody');
    expect((fm.fields as { always?: unknown }).always).toBeUndefined();
  });
});
