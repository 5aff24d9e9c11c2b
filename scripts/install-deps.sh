#!/usr/bin/env bash
# scripts/install-deps.sh - install, from Debian's packages, what the
# sidestream tests need and the machine lacks. Idempotent and silent when
# everything is there; runs `apt-get update` at most once, and only when a
# package has to be installed. Safe for CI (root, no stdin, CI=true).
#
#   kcat    Kafka command line client used by the integration tests
#   java    17+ (openjdk-17-jre-headless) to run the broker of scripts/kafka.sh
#   mvn     (maven) to resolve the broker's jars from Maven Central
#   javac   (openjdk-17-jdk-headless) to build the Kafka Streams peer of bench/compare.sh
#           and the registry of scripts/registry.sh
#   curl    the ready check of scripts/registry.sh
#   jq      `scripts/registry.sh selftest`
set -euo pipefail

log() { printf 'install-deps.sh: %s\n' "$*" >&2; }
die() { printf 'install-deps.sh: error: %s\n' "$*" >&2; exit 1; }

java_ok() {
  local bin v
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    bin="$JAVA_HOME/bin/java"
  else
    bin="$(command -v java 2>/dev/null)" || return 1
  fi
  v="$("$bin" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
  [[ -n "$v" && "$v" -ge 17 ]]
}

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
java_ok || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)

((${#missing[@]} == 0)) && exit 0

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
  SUDO=(sudo -n)
fi
command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand: ${missing[*]}"

export DEBIAN_FRONTEND=noninteractive
apt_install() {
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "$@" </dev/null >/tmp/install-deps.apt.log 2>&1
}

log "installing: ${missing[*]}"
# Without package lists (a fresh machine) install fails: update once, retry.
if ! apt_install "${missing[@]}"; then
  log "apt-get update"
  "${SUDO[@]}" apt-get update -q </dev/null >/tmp/install-deps.apt.log 2>&1 || {
    tail -n 20 /tmp/install-deps.apt.log >&2; die "apt-get update failed"; }
  apt_install "${missing[@]}" || {
    tail -n 20 /tmp/install-deps.apt.log >&2; die "apt-get install ${missing[*]} failed"; }
fi
log "installed: ${missing[*]}"
