#!/usr/bin/env python3
"""Lists every config key any nanobot release accepts, for src/config/nanobot-keys.ts.

Reads nanobot's sources statically (Python's ast, no import of nanobot or its dependencies) at
each release tag of a clone of github.com/HKUDS/nanobot, walks the pydantic models from the root
Config class, and prints a TypeScript module. Usage:

    python3 scripts/nanobot-config-keys.py /path/to/nanobot/clone > src/config/nanobot-keys.ts
"""
import ast
import json
import re
import subprocess
import sys

REPO = sys.argv[1]


def git(*args):
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True).stdout


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def tags():
    out = [t for t in git("tag").split() if re.match(r"^v\d", t)]
    key = lambda t: [int(x) if x.isdigit() else x for x in re.split(r"[.]|post", t[1:])]
    return sorted(out, key=lambda t: [(0, p) if isinstance(p, int) else (1, 0) for p in key(t)])


class Model:
    def __init__(self, name, module):
        self.name, self.module = name, module
        self.bases, self.fields, self.extra_allow = [], {}, False


def parse_models(tag):
    files = [f for f in git("ls-tree", "-r", "--name-only", tag, "nanobot").split() if f.endswith(".py")]
    models = {}
    for f in files:
        src = git("show", f"{tag}:{f}")
        if "BaseModel" not in src and "Base)" not in src and "Base," not in src and "Config(" not in src:
            continue
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            m = Model(node.name, f)
            m.bases = [ast.unparse(b) for b in node.bases]
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "model_config" for t in stmt.targets):
                    if "extra" in ast.unparse(stmt.value) and "allow" in ast.unparse(stmt.value):
                        m.extra_allow = True
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    name = stmt.target.id
                    if name.startswith("_") or name == "model_config" or "ClassVar" in ast.unparse(stmt.annotation):
                        continue
                    aliases = []
                    default = default_of(stmt.value)
                    if stmt.value is not None:
                        for sub in ast.walk(stmt.value):
                            if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "AliasChoices":
                                aliases += [a.value for a in sub.args if isinstance(a, ast.Constant)]
                            if isinstance(sub, ast.keyword) and sub.arg in ("alias", "validation_alias") and isinstance(sub.value, ast.Constant):
                                aliases.append(sub.value.value)
                    m.fields[name] = (stmt.annotation, aliases, default)
            models.setdefault(node.name, []).append(m)
    return models


NO_DEFAULT = object()


def literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return NO_DEFAULT


def default_of(value):
    """A field's default when it is a plain value (JSON-able), else NO_DEFAULT."""
    if value is None:
        return NO_DEFAULT
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "Field":
        for kw in value.keywords:
            if kw.arg == "default":
                return literal(kw.value)
            if kw.arg == "default_factory":
                return {"list": [], "dict": {}, "set": []}.get(ast.unparse(kw.value), NO_DEFAULT)
        return literal(value.args[0]) if value.args else NO_DEFAULT
    return literal(value)


def find(models, name, near=None):
    cands = models.get(name, [])
    if not cands:
        return None
    for c in cands:
        if c.module == near:
            return c
    for c in cands:
        if c.module.endswith("config/schema.py"):
            return c
    return cands[0]


def all_fields(models, m, seen=()):
    fields, extra = {}, m.extra_allow
    for b in m.bases:
        base = find(models, b.split(".")[-1], m.module)
        if base and base.name not in seen and base is not m:
            f, e = all_fields(models, base, seen + (m.name,))
            fields.update(f)
            extra = extra or e
    fields.update(m.fields)
    return fields, extra


def annotation_parts(ann):
    """(nullable, [class-or-container annotations]) of a type annotation."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        ann = ast.parse(ann.value, mode="eval").body
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        ln, lp = annotation_parts(ann.left)
        rn, rp = annotation_parts(ann.right)
        return ln or rn, lp + rp
    if isinstance(ann, ast.Constant) and ann.value is None:
        return True, []
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).split(".")[-1]
        if head == "Optional":
            return True, annotation_parts(ann.slice)[1]
        if head == "Union":
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            parts = [annotation_parts(e) for e in elts]
            return any(p[0] for p in parts), [x for p in parts for x in p[1]]
        if head == "Annotated":
            first = ann.slice.elts[0] if isinstance(ann.slice, ast.Tuple) else ann.slice
            return annotation_parts(first)
    return False, [ann]


def walk(models, m, prefix, out, depth=0):
    if depth > 8:
        return
    fields, extra = all_fields(models, m)
    if extra:
        out.setdefault(prefix + ("*",), False)
    for name, (ann, aliases, default) in fields.items():
        for key in {camel(name), *(camel(a) for a in aliases)}:
            path = prefix + (key,)
            nullable, parts = annotation_parts(ann)
            out[path] = out.get(path, False) or nullable
            if default is not NO_DEFAULT and isinstance(default, (str, int, float, bool, list, dict, type(None))):
                DEFAULTS[path] = default
            for part in parts:
                walk_type(models, m, part, path, out, depth)


def walk_type(models, m, ann, path, out, depth):
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value).split(".")[-1]
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if head in ("list", "List", "set", "tuple", "Sequence"):
            for e in elts:
                for p in annotation_parts(e)[1]:
                    walk_type(models, m, p, path + ("*",), out, depth + 1)
        elif head in ("dict", "Dict", "Mapping"):
            out.setdefault(path + ("*",), False)
            for p in annotation_parts(elts[-1])[1]:
                walk_type(models, m, p, path + ("*",), out, depth + 1)
        return
    name = ast.unparse(ann).split(".")[-1].strip("'\"")
    sub = find(models, name, m.module)
    if sub:
        walk(models, sub, path, out, depth + 1)


def channel_models(models):
    """Channel configs that live in their channel's module (nanobot >= 0.1.5): channel name -> models."""
    found = {}
    for cands in models.values():
        for c in cands:
            mm = re.match(r"nanobot/channels/([a-z0-9_]+)(?:\.py|/)", c.module)
            if mm and c.name.endswith("Config") and "enabled" in all_fields(models, c)[0]:
                found.setdefault(mm.group(1), []).append(c)
    return found


DEFAULTS = {}


def keys_at(tag):
    DEFAULTS.clear()
    models = parse_models(tag)
    root = next((c for c in models.get("Config", []) if c.module.endswith("config/schema.py")), None)
    out = {}
    walk(models, root, (), out)
    if ("channels", "*") in out:
        for name, cands in channel_models(models).items():
            for c in cands:
                out.setdefault(("channels", camel(name)), False)
                walk(models, c, ("channels", camel(name)), out)
    return out


def main():
    releases = tags()
    keys = {}
    for tag in releases:
        for path, nullable in keys_at(tag).items():
            k = ".".join(path)
            entry = keys.setdefault(k, {"first": tag, "last": tag, "nullable": False})
            entry["last"] = tag
            entry["nullable"] = entry["nullable"] or nullable
            # The newest release's default wins; a key without a plain default has none.
            entry["default"] = DEFAULTS.get(path, NO_DEFAULT)
    # Any other name under providers is a custom OpenAI-compatible provider with custom's fields.
    for k in list(keys):
        if k.startswith("providers.custom."):
            keys.setdefault("providers.*." + k[len("providers.custom."):], dict(keys[k]))
    latest = releases[-1]
    print("// Generated by scripts/nanobot-config-keys.py from nanobot's config schema at every release tag")
    print(f"// ({releases[0]} to {latest}). Do not edit by hand: run the script again.")
    print("//")
    print("// key (camelCase; * is any name or list item) -> [nullable in some release, first release, last release, default?]")
    print(f"export const NANOBOT_LATEST = {json.dumps(latest)};")
    print("export const NANOBOT_KEYS: Record<string, [boolean, string, string, unknown?]> = {")
    for k in sorted(keys):
        e = keys[k]
        default = "" if e["default"] is NO_DEFAULT else f", {json.dumps(e['default'], ensure_ascii=False)}"
        print(f"  {json.dumps(k)}: [{'true' if e['nullable'] else 'false'}, {json.dumps(e['first'])}, {json.dumps(e['last'])}{default}],")
    print("};")


main()
