# Shared by scripts/install-tools.sh and scripts/tests/install-check.sh:
# how one tool is installed, and how its install is checked without building.
# Sourced, not run. Every failure is one line naming what failed and what to
# run by hand.

log() { echo "[install-tools] $*" >&2; }

# die WHAT FIX: one line saying what failed, one saying what to run by hand.
die() {
  echo "[install-tools] FAILED: $1" >&2
  echo "[install-tools] to do it by hand: $2" >&2
  exit 1
}

# The version of a package in Cargo.lock.
lockfile_version() {
  awk -v name="$1" '$0 == "name = \"" name "\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

# A tool is a dev tool: built quickly (no LTO, many codegen units, opt-level
# 1) instead of as its release profile asks. trunk built this way takes a
# fraction of the time and still does in seconds what the page build asks.
fast_tool_build() {
  CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=64 \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
  CARGO_PROFILE_RELEASE_DEBUG=false \
  CARGO_PROFILE_RELEASE_INCREMENTAL=false \
  "$@"
}

# What kind of failure a cargo log shows: resolution (the tool's lockfile
# pins what the registry does not serve), missing (no such tool or version),
# network, or other.
cargo_failure_kind() {
  if grep -qE "could not find \`[^\`]+\` in registry|no matching package named" "$1"; then
    echo missing
  elif grep -qE "failed to select a version|failed to resolve patches|failed to get \`" "$1"; then
    echo resolution
  elif grep -qiE "failed to download|spurious network error|could not resolve host|failed to query replaced source|network failure|timed out" "$1"; then
    echo network
  else
    echo other
  fi
}

# The cargo error line worth quoting (the first `error:` and the line after).
cargo_error_line() {
  grep -m1 -A1 -E "^error" "$1" | tr '\n' ' ' | sed -E 's/ +/ /g' | cut -c1-300
}

# install_cargo_tool NAME VERSION: `cargo install --locked NAME@VERSION`, and
# when the registry does not serve a version the tool's own Cargo.lock pins,
# the same without --locked (its dependencies then resolve to what the
# registry serves; NAME stays at exactly VERSION). cargo installs atomically,
# so a failed run leaves nothing half-installed.
install_cargo_tool() {
  local name=$1 version=$2 err start=$SECONDS
  err=$(mktemp)
  log "installing $name $version (cargo install, built as a dev tool)"
  if fast_tool_build cargo install --locked "$name@$version" 2>&1 | tee "$err" >&2; then
    log "installed $name $version in $((SECONDS - start)) s"
    rm -f "$err"; return 0
  fi
  case "$(cargo_failure_kind "$err")" in
    resolution)
      log "$name $version: its Cargo.lock pins a version the registry does not serve; resolving its dependencies afresh (without --locked)"
      if fast_tool_build cargo install "$name@$version" 2>&1 | tee "$err" >&2; then
        log "installed $name $version in $((SECONDS - start)) s"
        rm -f "$err"; return 0
      fi ;;
    missing) die "$name $version is not in the registry ($(cargo_error_line "$err"))" "cargo install $name@$version" ;;
    network) die "network error while installing $name $version ($(cargo_error_line "$err"))" "cargo install $name@$version, once the registry is reachable" ;;
  esac
  die "cargo install $name@$version ($(cargo_error_line "$err"))" "cargo install $name@$version"
}

# probe_cargo_install LOG ARGS...: runs `cargo install ARGS` in a scratch root
# and target folder until it starts compiling (resolution and downloads are
# then done), and stops it there. Succeeds when compilation was reached.
probe_cargo_install() {
  local out=$1 scratch pid; shift
  scratch=$(mktemp -d)
  setsid cargo install --root "$scratch/root" --target-dir "$scratch/target" "$@" >"$out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if grep -qE '^ *Compiling ' "$out"; then
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      rm -rf "$scratch"
      return 0
    fi
    sleep 0.2
  done
  wait "$pid" 2>/dev/null || true
  rm -rf "$scratch"
  grep -qE '^ *Compiling ' "$out"
}

# check_cargo_tool NAME VERSION: would install_cargo_tool succeed in resolving?
check_cargo_tool() {
  local name=$1 version=$2 out start=$SECONDS
  out=$(mktemp)
  if probe_cargo_install "$out" --locked "$name@$version"; then
    log "check: $name $version resolves (--locked) in $((SECONDS - start)) s"
    rm -f "$out"; return 0
  fi
  if [ "$(cargo_failure_kind "$out")" = resolution ]; then
    local why; why=$(cargo_error_line "$out")
    if probe_cargo_install "$out" "$name@$version"; then
      log "check: $name $version resolves without --locked in $((SECONDS - start)) s (its lockfile: $why)"
      rm -f "$out"; return 0
    fi
  fi
  log "check FAILED: $name $version would not install: $(cargo_error_line "$out")"
  rm -f "$out"; return 1
}

# check_npm_lockfile LOCK: every package the lockfile pins is served.
check_npm_lockfile() {
  local lock=$1 failed=0 spec
  [ -f "$lock" ] || { log "check FAILED: no $lock"; return 1; }
  while read -r spec; do
    [ -n "$spec" ] || continue
    if [ "$(npm view "$spec" version 2>/dev/null | tail -1)" = "${spec##*@}" ]; then
      log "check: npm $spec resolves"
    else
      log "check FAILED: npm $spec (from $lock) is not served by the npm registry"
      failed=1
    fi
  done < <(node -e '
    const lock = require(require("path").resolve(process.argv[1]));
    for (const [path, p] of Object.entries(lock.packages || {})) {
      if (!path) continue;
      const name = p.name || path.slice(path.lastIndexOf("node_modules/") + 13);
      console.log(`${name}@${p.version}`);
    }' "$lock")
  return $failed
}

# check_apt_packages PKG...: apt would install them (a simulation).
check_apt_packages() {
  local out; out=$(mktemp)
  if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -q >/dev/null 2>&1 || true
  fi
  if apt-get install --simulate -q "$@" >"$out" 2>&1; then
    log "check: apt packages $* resolve"
    rm -f "$out"; return 0
  fi
  log "check FAILED: apt cannot install $*: $(grep -m1 -E '^E:' "$out")"
  rm -f "$out"; return 1
}

# apt-get install as root (directly, or through sudo).
apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  log "installing Debian's $*"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q || die "apt-get update (network?)" "apt-get update && apt-get install -y $*"
  $sudo apt-get install -y -q "$@" || die "apt-get install $*" "apt-get install -y $*"
}

# npm_ci DIR: the packages of DIR's package-lock.json, once. A stamp with the
# lockfile's hash is written only after `npm ci` succeeded, so a run cut short
# is redone by the next one.
npm_ci() {
  local dir=$1 want stamp
  stamp="$dir/node_modules/.oomscope-lock"
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  log "installing the npm packages of $dir"
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund) \
    || die "npm ci in $dir" "cd $dir && npm ci"
  echo "$want" >"$stamp"
}

# pip_install PYTHON PKG...: into that interpreter. Debian marks its Python
# externally managed; test machines install into it on purpose.
pip_install() {
  local py=$1; shift
  log "installing Python packages: $*"
  "$py" -m pip install --quiet "$@" 2>/dev/null \
    || "$py" -m pip install --quiet --break-system-packages "$@" \
    || die "pip install $*" "$py -m pip install $*"
}

# check_pip_packages PYTHON PKG...: pip would resolve them all (a dry run
# that ignores what is installed, so it asks the index).
check_pip_packages() {
  local py=$1 out; shift
  out=$(mktemp)
  if "$py" -m pip install --dry-run --quiet --ignore-installed "$@" >"$out" 2>&1; then
    log "check: Python packages $* resolve"
    rm -f "$out"; return 0
  fi
  log "check FAILED: pip cannot install $*: $(grep -m1 -E 'ERROR' "$out" | cut -c1-300)"
  rm -f "$out"; return 1
}
