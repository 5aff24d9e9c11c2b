# scripts/lib/service.sh - the process plumbing scripts/kafka.sh and
# scripts/registry.sh share. Each runs one JVM as a daemon on loopback,
# finds it again by a marker on its command line (its own is_ours test),
# stops it with SIGTERM and then SIGKILL, and serialises its commands on a
# lock file. Sourced, never run; the caller defines log() and die() first.

# svc_find_java MIN WHAT: sets JAVA_BIN to $JAVA_HOME/bin/java, else the
# java on PATH; dies unless it is Java MIN or later (WHAT needs it).
svc_find_java() {
  local min="$1" what="$2" v
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    JAVA_BIN="$JAVA_HOME/bin/java"
  elif command -v java >/dev/null 2>&1; then
    JAVA_BIN="$(command -v java)"
  else
    die "java not found ($what needs Java $min+); run scripts/install-deps.sh"
  fi
  v="$("$JAVA_BIN" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
  if [[ -n "$v" && "$v" -lt "$min" ]]; then
    die "$JAVA_BIN is Java $v; $what needs Java $min+ (set JAVA_HOME)"
  fi
}

# svc_port_open HOST PORT: something accepts connections there.
svc_port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# svc_with_lock LOCK_FILE CMD...: runs CMD holding an exclusive flock on
# LOCK_FILE, as descriptor 9, which stays open (and locked) until the
# script exits or closes it.
svc_with_lock() {
  local lock="$1"
  shift
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  flock 9
  "$@"
}

# svc_exec_daemon CMD...: closes every inherited descriptor above 2 (lock
# files, a caller's pipes) and becomes CMD in a session of its own. Run it
# in a background subshell, `( svc_exec_daemon java ... ) </dev/null
# >LOG 2>&1 &`, so that $! is CMD's pid.
svc_exec_daemon() {
  local fd
  for fd in "/proc/$BASHPID/fd/"*; do
    fd="${fd##*/}"
    if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  exec nohup setsid "$@"
}

# svc_stop PID IS_OURS TIMEOUT: SIGTERM, SIGKILL after TIMEOUT seconds,
# then waits (up to 5 s) until `IS_OURS PID` says no: a zombie or a late
# exit is not gone until /proc says so.
svc_stop() {
  local pid="$1" is_ours="$2" timeout="$3" start=$SECONDS _
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - start >= timeout)); then
      log "still running after $timeout s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
  for _ in $(seq 1 50); do "$is_ours" "$pid" || break; sleep 0.1; done
  log "stopped in $((SECONDS - start)) s"
}

# svc_remove_dir DIR REPO_DIR: deletes DIR, refusing "", /, $HOME and the
# repository.
svc_remove_dir() {
  local dir="$1" repo="$2"
  [[ -e "$dir" ]] || return 0
  case "$dir" in
    ""|/|"${HOME:-/}"|"$repo") die "refusing to delete '$dir'" ;;
  esac
  rm -rf "$dir"
  log "removed $dir"
}

# svc_usage SCRIPT: prints SCRIPT's header comment, up to `set -euo`.
svc_usage() { sed -n '2,/^set -euo/p' "$1" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; }

# svc_cmdline_has PID ARG: the process's command line holds ARG as one
# whole argument (a -D property names which server a JVM is, not its port).
svc_cmdline_has() {
  [[ -r "/proc/$1/cmdline" ]] || return 1
  tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -qxF -- "$2"
}

# svc_find_pid PID_FILE MATCH: print the pid of our server: the pid file's
# when MATCH (a function taking a pid) says it is ours, else the first
# process MATCH accepts; exit 1 when there is none.
svc_find_pid() {
  local pidfile="$1" match="$2" pid d
  if [[ -f "$pidfile" ]]; then
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if [[ "$pid" =~ ^[0-9]+$ ]] && "$match" "$pid"; then echo "$pid"; return 0; fi
  fi
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    if "$match" "$pid"; then echo "$pid"; return 0; fi
  done
  return 1
}
