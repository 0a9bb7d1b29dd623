#!/usr/bin/env bash
# Lists tmux sessions: on one socket, or on every socket in the skill's socket folder.
set -euo pipefail

usage() {
  cat <<'TEXT'
Usage: find-sessions.sh [-S socket-path | -L socket-name | -A] [-q text]

  -S, --socket-path PATH  a tmux socket file (tmux -S)
  -L, --socket NAME       a named socket of the default tmux folder (tmux -L)
  -A, --all               every socket in $TROUPE_TMUX_SOCKET_DIR
                          (default: ${TMPDIR:-/tmp}/troupe-tmux-sockets)
  -q, --query TEXT        only sessions whose name contains TEXT (any case)
  -h, --help              this text

Without -S, -L or -A: the default tmux server.
Prints one line per session: name, attached or detached, when it started.
TEXT
}

socket_dir="${TROUPE_TMUX_SOCKET_DIR:-${TMPDIR:-/tmp}/troupe-tmux-sockets}"
socket_path="" socket_name="" query="" all=false

need_value() { [[ $# -ge 2 && -n "$2" ]] || { echo "find-sessions.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -S|--socket-path) need_value "$@"; socket_path="$2"; shift 2 ;;
    -L|--socket)      need_value "$@"; socket_name="$2"; shift 2 ;;
    -A|--all)         all=true; shift ;;
    -q|--query)       need_value "$@"; query="$2"; shift 2 ;;
    -h|--help)        usage; exit 0 ;;
    *) echo "find-sessions.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

chosen=0
[[ -n "$socket_path" ]] && chosen=$((chosen + 1))
[[ -n "$socket_name" ]] && chosen=$((chosen + 1))
[[ "$all" == true ]] && chosen=$((chosen + 1))
if (( chosen > 1 )); then
  echo "find-sessions.sh: give one of -S, -L or -A, not several" >&2
  exit 2
fi
if ! command -v tmux >/dev/null 2>&1; then
  echo "find-sessions.sh: tmux is not installed (apt install tmux, brew install tmux)" >&2
  exit 127
fi

# list LABEL TMUX-ARGS...: the sessions of one server; 1 when no server answers there.
list() {
  local label="$1"; shift
  local out
  if ! out="$(tmux "$@" list-sessions -F '#{session_name}	#{session_attached}	#{t:session_created}' 2>/dev/null)"; then
    echo "no tmux server on $label"
    return 1
  fi
  if [[ -n "$query" ]]; then
    out="$(printf '%s\n' "$out" | grep -iF -- "$query" || true)"
  fi
  if [[ -z "$out" ]]; then
    echo "no sessions${query:+ matching \"$query\"} on $label"
    return 0
  fi
  echo "sessions on $label:"
  while IFS=$'\t' read -r name attached created; do
    local state=detached
    [[ "$attached" != "0" ]] && state=attached
    printf '  %s (%s, started %s)\n' "$name" "$state" "$created"
  done <<<"$out"
}

if [[ "$all" == true ]]; then
  if [[ ! -d "$socket_dir" ]]; then
    echo "no socket folder at $socket_dir (no session was started there yet)"
    exit 1
  fi
  found=false status=0
  for sock in "$socket_dir"/*; do
    [[ -S "$sock" ]] || continue
    found=true
    list "$sock" -S "$sock" || status=1
  done
  [[ "$found" == true ]] || { echo "no sockets in $socket_dir"; exit 1; }
  exit "$status"
elif [[ -n "$socket_path" ]]; then
  list "$socket_path" -S "$socket_path"
elif [[ -n "$socket_name" ]]; then
  list "socket name $socket_name" -L "$socket_name"
else
  list "the default socket"
fi
