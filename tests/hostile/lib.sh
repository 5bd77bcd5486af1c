# Helpers for the hostile-input battery (sourced by scripts/hostile; one tests/hostile/*.sh per topic).
# Environment given to every case file:
#   BIN   directory of the built tools (gguf-inspect, gguf-requant, ...)
#   DATA  tests/data (the vendored fixture pack)
#   TMP   a scratch directory of this case file (removed afterwards)
# A case runs one command and checks its exit status and output:
#   hostile_case NAME EXPECTED_STATUS CMD [ARGS...]   -> sets OUT and ERR (stdout/stderr text)
# then optional checks on the last case:
#   expect_err_contains TEXT    stderr contains TEXT
#   expect_err_one_line         stderr is exactly one line (errors never span lines)
#   expect_no_file PATH         PATH does not exist (no partial output)
#   expect_true NAME CMD...     a free-form check (status 0 passes)
# A crash (status >= 128: signal, sanitizer abort) always fails the case.

HOSTILE_PASS=${HOSTILE_PASS:-0}
HOSTILE_FAIL=${HOSTILE_FAIL:-0}
HOSTILE_LAST=""

hostile_fail() {
    HOSTILE_FAIL=$((HOSTILE_FAIL + 1))
    echo "FAIL $HOSTILE_LAST: $*" >&2
}
hostile_pass() { HOSTILE_PASS=$((HOSTILE_PASS + 1)); }

hostile_case() {
    local name=$1 want=$2
    shift 2
    HOSTILE_LAST=$name
    local o e
    o=$(mktemp "$TMP/.out.XXXXXX"); e=$(mktemp "$TMP/.err.XXXXXX")
    timeout 120 "$@" >"$o" 2>"$e" </dev/null
    local rc=$?
    OUT=$(cat "$o"); ERR=$(cat "$e"); rm -f "$o" "$e"
    if [ "$rc" -ge 124 ]; then hostile_fail "status $rc (timeout, crash or sanitizer abort): $(printf '%s' "$ERR" | tail -n 3)"; return; fi
    if [ "$rc" != "$want" ]; then hostile_fail "status $rc, expected $want: $(printf '%s' "$ERR" | head -n 3)"; return; fi
    hostile_pass
}

expect_err_contains() {
    case "$ERR" in *"$1"*) hostile_pass ;; *) hostile_fail "stderr lacks '$1': $ERR" ;; esac
}
expect_err_one_line() {
    local n
    n=$(printf '%s\n' "$ERR" | grep -c '')
    [ -n "$ERR" ] && [ "$n" = 1 ] && hostile_pass || hostile_fail "stderr is $n lines: $ERR"
}
expect_no_file() { [ ! -e "$1" ] && hostile_pass || hostile_fail "'$1' exists"; }
expect_true() {
    local name=$1; shift
    HOSTILE_LAST="$HOSTILE_LAST/$name"
    if "$@"; then hostile_pass; else hostile_fail "check failed: $*"; fi
}
