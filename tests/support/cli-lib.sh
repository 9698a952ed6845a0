# What every CLI test script shares, sourced first thing:
#   . "$(dirname "$0")/support/cli-lib.sh" "$@"
# It takes the script's arguments (<path-to-ntprof> <source-dir>) and gives
# NTPROF, SRC, PY (Debian's python3, which has numpy, onnx, jsonschema), a
# temporary directory T removed at exit, the pass/fail counters with ok and
# bad, the expect_* checks below, and finish, which prints the counts and
# sets the script's exit status.
set -u
NTPROF=$1
SRC=$2
PY=/usr/bin/python3
T=$(mktemp -d)
# chmod first: a test may leave a read-only directory behind on purpose.
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_exit CODE CMD...: run CMD with its output in $T/out and $T/err,
# and check its exit status.
expect_exit() {
    local want=$1
    shift
    "$@" >"$T/out" 2>"$T/err"
    local got=$?
    if [ "$got" = "$want" ]; then ok; else bad "exit $got (want $want): $*"; cat "$T/err"; fi
}

# expect_in_err TEXT: the last command's stderr contains TEXT.
expect_in_err() {
    if grep -qF -- "$1" "$T/err"; then ok; else bad "stderr lacks '$1':"; cat "$T/err"; fi
}

# expect_err TEXT: ... and is one line, warnings aside (the CLI's errors
# are one line each).
expect_err() {
    expect_in_err "$1"
    local lines
    lines=$(grep -vc '^ntprof: warning' "$T/err")
    if [ "$lines" = 1 ]; then ok; else bad "stderr has $lines lines (want 1)"; cat "$T/err"; fi
}

# finish [NAME]: the counts, and the script's exit status.
finish() {
    echo "${1:+$1: }$pass passed, $fail failed"
    [ "$fail" = 0 ]
}

# slurm_cluster_up CPUS: a real Slurm cluster on this machine
# (scripts/local-slurm.sh) declaring CPUS CPUs, torn down at exit with T;
# exports SLURM_CONF, sets CLUSTER_DIR and makes NTPROF an absolute path
# (the tasks run elsewhere). Skips the test (77) with the reason where
# Slurm or munge is not installed, or the cluster does not start (not
# root, ...).
slurm_cluster_up() {
    local b line
    for b in slurmctld slurmd sbatch scontrol munged mungekey sinfo; do
        if ! command -v "$b" >/dev/null 2>&1; then
            echo "skipped: '$b' not found (Debian: slurm-wlm, munge; scripts/deps.sh)"
            exit 77
        fi
    done
    if [ "$(id -u)" != 0 ]; then
        echo "skipped: the local Slurm cluster needs root (slurmd starts jobs as their user)"
        exit 77
    fi
    NTPROF=$(cd "$(dirname "$NTPROF")" && pwd)/$(basename "$NTPROF")
    CLUSTER_DIR=
    trap '[ -n "$CLUSTER_DIR" ] && bash "$SRC/scripts/local-slurm.sh" down "$CLUSTER_DIR" 2>/dev/null
          chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
    line=$(NTP_SLURM_CPUS=$1 bash "$SRC/scripts/local-slurm.sh" up 2>"$T/up.err" | tail -n 1)
    if [ "${line#export SLURM_CONF=}" = "$line" ]; then
        echo "skipped: the local Slurm cluster did not start:"
        cat "$T/up.err"
        exit 77
    fi
    eval "$line"
    CLUSTER_DIR=$(dirname "$SLURM_CONF")
    export SLURM_CONF
}

# A PostgreSQL server of its own for the test (scripts/local-postgres.sh, in
# a folder under /tmp that the unprivileged user it runs as when we are root
# can reach): sets PGUP, PSQL, PGDIR (named on up's "dir:" line), URL (its
# last line) and SOCK (the socket URL), and stops it on exit, first running
# the shell command $1 where one is given. Skips the test (77) where this
# ntprof has no libpq or no server binaries are installed; fails it where
# the server does not start.
pg_server_up() {
    local bindir
    PGUP=$SRC/scripts/local-postgres.sh
    "$NTPROF" history --db postgresql://127.0.0.1:1/x >"$T/out" 2>"$T/err"
    if grep -q "built without PostgreSQL" "$T/err"; then
        echo "skipped: this ntprof was built without libpq: $(cat "$T/err")"
        exit 77
    fi
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    if [ -z "$bindir" ] && ! command -v initdb >/dev/null; then
        echo "skipped: no PostgreSQL server binaries (apt install postgresql)"
        exit 77
    fi
    PSQL=${bindir:+$bindir/}psql
    trap "${1:-:}"'; [ -n "${PGDIR:-}" ] && "$PGUP" down "$PGDIR" >/dev/null 2>&1; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
    if ! "$PGUP" up >"$T/up" 2>&1; then
        echo "FAIL: local-postgres.sh up:"
        cat "$T/up"
        exit 1
    fi
    PGDIR=$(sed -n 's/^dir: //p' "$T/up")
    URL=$(tail -1 "$T/up")
    SOCK=$(sed -n 's/^socket URL: //p' "$T/up")
}
