#!/usr/bin/env bash
# Lists the C sources whose clang-format output differs from the file, and
# exits 1 if there are any (0 when all are formatted, 2 on a usage error or a
# missing clang-format). The style is .clang-format at the top of the tree.
#
# Usage: scripts/check-format.sh [--fix] [FILE...]
#   no FILE: every .c, .h and .cu file git knows (tracked, or new and not
#            ignored), except generated and third-party ones (below)
#   --fix:   format the files in place instead of listing them (`make format`)
#   CLANG_FORMAT=/path/to/clang-format picks another binary (default:
#   clang-format, Debian 12's clang-format 14; other versions format a few
#   constructs differently, so CI uses that one)
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
fix=0
files=()
for a in "$@"; do
    case "$a" in
        --fix) fix=1 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "check-format.sh: unknown option '$a' (expected --fix or file names)" >&2; exit 2 ;;
        *) files+=("$a") ;;
    esac
done

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    echo "check-format.sh: '$CLANG_FORMAT' not found (Debian: apt-get install clang-format," \
         "or scripts/deps.sh)" >&2
    exit 2
fi

# Files never formatted: build trees (generated sources such as onnx.pb-c.c
# and ntp-version.h live there, and git ignores them anyway) and anything
# vendored from another project. Extend this pattern rather than adding
# `clang-format off` to a file that is not ours.
skip='^(build[^/]*|out|third[-_]party|vendor|external)/'

if [ ${#files[@]} -eq 0 ]; then
    while IFS= read -r f; do
        [[ "$f" =~ $skip ]] && continue
        [ -f "$f" ] && files+=("$f")
    done < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cu' | sort -u)
fi

if [ "$fix" = 1 ]; then
    [ ${#files[@]} -eq 0 ] || "$CLANG_FORMAT" -i --style=file:.clang-format "${files[@]}"
    exit 0
fi

bad=0
for f in "${files[@]}"; do
    if ! "$CLANG_FORMAT" --style=file:.clang-format "$f" | cmp -s - "$f"; then
        echo "$f"
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "check-format.sh: $bad of ${#files[@]} files differ from .clang-format;" \
         "'make format' formats them" >&2
    exit 1
fi
