#!/usr/bin/env bash
# Waits until a tmux pane shows some text (a prompt, "done", an error), or gives up after a timeout.
set -euo pipefail

usage() {
  cat <<'TEXT'
Usage: wait-for-text.sh -t target -p pattern [-S socket-path] [-F] [-T seconds] [-i seconds] [-l lines]

  -t, --target    pane to watch: session, session:window or session:window.pane (required)
  -p, --pattern   extended regular expression to wait for (required)
  -F, --fixed     the pattern is plain text, not a regular expression
  -S, --socket    tmux socket file (tmux -S); default: the default tmux server
  -T, --timeout   seconds to wait, a whole number (default 15)
  -i, --interval  seconds between looks (default 0.5)
  -l, --lines     how many lines of history to search (default 1000)
  -h, --help      this text

Exit 0 when the text shows, 1 on timeout (the pane's last lines go to stderr), 2 for bad usage.
TEXT
}

target="" pattern="" fixed=false socket="" timeout=15 interval=0.5 lines=1000
need_value() { [[ $# -ge 2 && -n "$2" ]] || { echo "wait-for-text.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -t|--target)   need_value "$@"; target="$2"; shift 2 ;;
    -p|--pattern)  need_value "$@"; pattern="$2"; shift 2 ;;
    -F|--fixed)    fixed=true; shift ;;
    -S|--socket)   need_value "$@"; socket="$2"; shift 2 ;;
    -T|--timeout)  need_value "$@"; timeout="$2"; shift 2 ;;
    -i|--interval) need_value "$@"; interval="$2"; shift 2 ;;
    -l|--lines)    need_value "$@"; lines="$2"; shift 2 ;;
    -h|--help)     usage; exit 0 ;;
    *) echo "wait-for-text.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -z "$target" || -z "$pattern" ]]; then
  echo "wait-for-text.sh: -t target and -p pattern are both required (see --help)" >&2
  exit 2
fi
[[ "$timeout" =~ ^[0-9]+$ ]] || { echo "wait-for-text.sh: -T takes whole seconds, not \"$timeout\"" >&2; exit 2; }
[[ "$lines" =~ ^[0-9]+$ ]] || { echo "wait-for-text.sh: -l takes a whole number of lines, not \"$lines\"" >&2; exit 2; }
[[ "$interval" =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "wait-for-text.sh: -i takes seconds (0.5, 2), not \"$interval\"" >&2; exit 2; }
if ! command -v tmux >/dev/null 2>&1; then
  echo "wait-for-text.sh: tmux is not installed (apt install tmux, brew install tmux)" >&2
  exit 127
fi

tmux_cmd=(tmux)
[[ -n "$socket" ]] && tmux_cmd+=(-S "$socket")
grep_mode=-E
[[ "$fixed" == true ]] && grep_mode=-F

deadline=$(( $(date +%s) + timeout ))
while :; do
  # -J joins wrapped lines so a long line matches as one.
  if ! text="$("${tmux_cmd[@]}" capture-pane -p -J -t "$target" -S "-$lines" 2>&1)"; then
    echo "wait-for-text.sh: cannot read pane $target: $text" >&2
    exit 1
  fi
  if printf '%s\n' "$text" | grep -q "$grep_mode" -- "$pattern"; then
    exit 0
  fi
  if (( $(date +%s) >= deadline )); then
    echo "wait-for-text.sh: \"$pattern\" did not show in $target within ${timeout}s; its last lines:" >&2
    printf '%s\n' "$text" | tail -n 20 >&2
    exit 1
  fi
  sleep "$interval"
done
