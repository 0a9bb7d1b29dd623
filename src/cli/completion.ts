import type { Command } from "commander";
import { TroupeError } from "../errors.js";

export const SHELLS = ["bash", "zsh"] as const;
export type Shell = (typeof SHELLS)[number];

interface Word {
  word: string;
  description: string;
}

/** One command of the program as completion sees it: its subcommands (or argument choices), its options, and which options take a value. */
interface Level {
  path: string;
  commands: Word[];
  flags: Word[];
  valueFlags: string[];
}

/** Walks the commander program: every command's subcommands, options (help included) and argument choices. */
function levels(cmd: Command, path = ""): Level[] {
  const help = cmd.createHelp();
  const subcommands = help.visibleCommands(cmd);
  const options = help.visibleOptions(cmd);
  const commands: Word[] = [
    ...subcommands.flatMap((c) => [c.name(), ...c.aliases()].map((word) => ({ word, description: c.description() }))),
    ...(cmd.registeredArguments[0]?.argChoices ?? []).map((word) => ({ word, description: cmd.registeredArguments[0]!.description || word })),
  ];
  const flags = options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)).map((word) => ({ word, description: o.description })));
  const valueFlags = options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)));
  const children = cmd.commands.filter((c) => subcommands.includes(c));
  return [{ path, commands, flags, valueFlags }, ...children.flatMap((c) => levels(c, path ? `${path} ${c.name()}` : c.name()))];
}

/** A `case` pattern list matching `<command path>|<word>` for each pair (names and flags are plain [\w-], safe in single quotes). */
const pairs = (entries: Array<[string, string]>) => entries.map(([path, word]) => `'${path}|${word}'`).join("|");
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function commandPairs(all: Level[]): Array<[string, string]> {
  return all.filter((l) => l.path).map((l) => {
    const cut = l.path.lastIndexOf(" ");
    return [cut < 0 ? "" : l.path.slice(0, cut), l.path.slice(cut + 1)];
  });
}
const valuePairs = (all: Level[]): Array<[string, string]> => all.flatMap((l) => l.valueFlags.map((f) => [l.path, f] as [string, string]));

function bash(name: string, all: Level[]): string {
  const values = valuePairs(all);
  return `# ${name} completion for bash. Load it with: source <(${name} completion bash)
# or save it as ~/.local/share/bash-completion/completions/${name}
_${name}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ "$w" == -* ]]; then
      case "$cmd|$w" in
        ${values.length ? `${pairs(values)})
          # The next word is this option's value, not a command.
          if ((i + 1 == COMP_CWORD)); then COMPREPLY=(); return; fi
          ((i++)) ;;` : "'') ;;"}
      esac
      continue
    fi
    case "$cmd|$w" in
      ${pairs(commandPairs(all))}) cmd="\${cmd:+$cmd }$w" ;;
    esac
  done
  local commands="" flags=""
  case "$cmd" in
${all.map((l) => `    ${quote(l.path)}) commands=${quote(l.commands.map((w) => w.word).join(" "))}; flags=${quote(l.flags.map((w) => w.word).join(" "))} ;;`).join("\n")}
  esac
  # Options when a dash is typed (or nothing else may follow), else subcommands.
  if [[ "$cur" == -* || -z "$commands" ]]; then commands="$flags"; fi
  COMPREPLY=($(compgen -W "$commands" -- "$cur"))
}
complete -F _${name} ${name}
`;
}

function zsh(name: string, all: Level[]): string {
  const values = valuePairs(all);
  const describe = (w: Word) => quote(`${w.word.replace(/:/g, "\\:")}:${w.description.replace(/\s+/g, " ")}`);
  return `#compdef ${name}
# ${name} completion for zsh. Load it with: source <(${name} completion zsh)
# or save it as _${name} in a directory on $fpath
_${name}() {
  local cmd="" w i
  local -a commands flags
  for ((i = 2; i < CURRENT; i++)); do
    w="\${words[i]}"
    if [[ "$w" == -* ]]; then
      case "$cmd|$w" in
        ${values.length ? `${pairs(values)})
          # The next word is this option's value, not a command.
          if ((i + 1 == CURRENT)); then return 1; fi
          ((i++)) ;;` : "'') ;;"}
      esac
      continue
    fi
    case "$cmd|$w" in
      ${pairs(commandPairs(all))}) cmd="\${cmd:+$cmd }$w" ;;
    esac
  done
  case "$cmd" in
${all.map((l) => `    ${quote(l.path)}) commands=(${l.commands.map(describe).join(" ")}); flags=(${l.flags.map(describe).join(" ")}) ;;`).join("\n")}
  esac
  # Options when a dash is typed (or nothing else may follow), else subcommands.
  if [[ "$PREFIX" == -* || \${#commands} -eq 0 ]]; then
    _describe -t options 'option' flags
  else
    _describe -t commands '${name} command' commands
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _${name} "$@"
else
  compdef _${name} ${name}
fi
`;
}

/** `troupe completion bash|zsh`: a completion script generated from the program's own commands and options. */
export function completionScript(program: Command, shell: string): string {
  if (!(SHELLS as readonly string[]).includes(shell)) throw new TroupeError(`no completion for ${shell}: troupe completion bash or zsh`);
  const all = levels(program);
  return shell === "bash" ? bash(program.name(), all) : zsh(program.name(), all);
}
