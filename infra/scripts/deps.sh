# Sourced by the ensure-*-deps.sh scripts: installing Debian and npm
# packages when they are missing. Callers define log().

deb_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo -n "$@"
  else
    log "need root to run: $*"
    return 1
  fi
}

# apt_install PKG...: installs the packages (none: nothing), quietly unless
# it fails; exits 1 when it does.
apt_install() {
  [ "$#" -gt 0 ] || return 0
  log "installing Debian packages: $*"
  local out
  out="$(mktemp)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { as_root apt-get update -qq && as_root apt-get install -y -qq "$@"; } >"$out" 2>&1 </dev/null; then
    cat "$out" >&2
    rm -f "$out"
    log "apt-get install failed"
    exit 1
  fi
  rm -f "$out"
}

# npm_ci DIR PACKAGE: installs DIR's npm packages from its lock file when
# PACKAGE is absent from node_modules or the lock changed since the last
# install (npm records its own copy in node_modules).
npm_ci() {
  local dir="$1" pkg="$2"
  if [ ! -f "$dir/node_modules/$pkg/package.json" ] \
    || [ ! -f "$dir/node_modules/.package-lock.json" ] \
    || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "installing npm packages in ${dir#"$root"/}"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error </dev/null) >&2
  fi
}
