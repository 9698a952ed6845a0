#!/usr/bin/env bash
# The shared library exports the public API and nothing else: every function
# declared NTP_API in include/ntprof/*.h is in `nm -D`, every exported
# symbol is one of them (no internal ntp__ function, no bundled protobuf-c
# code), and no function declared in a public header lacks the mark.
# Usage: exports.sh <path-to-libntprof.so> <source-dir>
lib=$1
src=$2
command -v nm >/dev/null || { echo "nm not found: skipped"; exit 77; }
[ -f "$lib" ] || { echo "no shared library at $lib"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

# Names declared NTP_API (one declaration may span lines; its name is on the first).
sed -n 's/^NTP_API [^(]*\<\(ntp_[a-z0-9_]*\)(.*/\1/p' "$src"/include/ntprof/*.h | sort -u >"$T/api"
[ -s "$T/api" ] || { echo "no NTP_API declarations found in $src/include/ntprof"; exit 1; }

# Top-level function declarations without the mark.
grep -nE '^[a-z][^(#]*\<ntp_[a-z0-9_]+\(' "$src"/include/ntprof/*.h |
    grep -vE ':(NTP_API |typedef |static )' >"$T/unmarked"
if [ -s "$T/unmarked" ]; then
    echo "public functions declared without NTP_API:"
    cat "$T/unmarked"
    fail=1
fi

# Exported symbols. Names with a leading underscore are the toolchain's
# (_init, _fini, __bss_start, sanitizer hooks), not the library's.
nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
    grep -v '^_' | sort -u >"$T/exported"
comm -13 "$T/api" "$T/exported" >"$T/extra"
if [ -s "$T/extra" ]; then
    echo "exported but not declared NTP_API in include/ntprof ($(wc -l <"$T/extra")):"
    head -50 "$T/extra"
    fail=1
fi
comm -23 "$T/api" "$T/exported" >"$T/missing"
if [ -s "$T/missing" ]; then
    echo "declared NTP_API but not exported ($(wc -l <"$T/missing")):"
    cat "$T/missing"
    fail=1
fi
[ $fail = 0 ] && echo "ok: $(wc -l <"$T/exported") symbols exported, all of them public API"
exit $fail
