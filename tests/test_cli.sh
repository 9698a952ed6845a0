#!/usr/bin/env bash
# The ntprof CLI as a user meets it: exit codes, one-line errors on stderr,
# nothing written on failure, and well-formed reports.
# Usage: test_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

expect_exit 0 "$NTPROF" --version
grep -q '^ntprof [0-9]' "$T/out" && ok || bad "--version output: $(cat "$T/out")"
# A built backend this machine cannot run is named, with the reason.
"$NTPROF" --version | tail -n +2 >"$T/unusable"
if [ -s "$T/unusable" ]; then
    built=$("$NTPROF" run --help | sed -n 's/.*(built: \([a-z0-9,]*\)).*/\1/p')
    while IFS= read -r line; do
        name=${line%%:*}
        reason=${line#*: built, but not usable on this machine: }
        case ",$built," in *",$name,"*) ok ;; *) bad "--version: '$line' names no built backend ($built)" ;; esac
        [ -n "$reason" ] && [ "$reason" != "$line" ] && ok || bad "--version gives no reason: '$line'"
    done <"$T/unusable"
fi
expect_exit 0 "$NTPROF" help
grep -q 'analyze' "$T/out" && grep -q 'run' "$T/out" && ok || bad "help lists no commands"
expect_exit 0 "$NTPROF" help run
grep -q -- '--iterations' "$T/out" && ok || bad "help run lacks --iterations"
expect_exit 0 "$NTPROF" analyze --help
expect_exit 2 "$NTPROF"
expect_exit 2 "$NTPROF" anlyze x.xml
expect_err "unknown command 'anlyze'; did you mean 'analyze'?"
expect_exit 2 "$NTPROF" analyze
expect_err "analyze needs a topology FILE"
expect_exit 2 "$NTPROF" analyze --format yaml "$SRC/models/tiny-mlp.xml"
expect_err "--format expects table, json or csv, got 'yaml'"
expect_exit 2 "$NTPROF" run --iterations 0 "$SRC/models/tiny-mlp.xml"
expect_err "--iterations expects a positive integer"
# --precision is one parser's (ntp_dtype_parse) for every reader; tf32 is a
# math mode of run only, and i32 no compute precision.
expect_exit 2 "$NTPROF" analyze --precision tf32 "$SRC/models/tiny-mlp.xml"
expect_err "--precision expects f32, bf16, f16 or i8, got 'tf32'"
expect_exit 2 "$NTPROF" run --precision i32 "$SRC/models/tiny-mlp.xml"
expect_err "--precision expects f32, bf16, f16, i8 or tf32, got 'i32'"
expect_exit 0 "$NTPROF" analyze --precision fp16 "$SRC/models/tiny-mlp.xml" -f json
grep -q '"precision": *"f16"' "$T/out" && ok || bad "--precision fp16: $(head -c 300 "$T/out")"
# tf32 loads the topology at f32 (its math is the backend's business).
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -p tf32 -n 1 -w 0 --min-time 0 --no-db -f json
grep -q '"precision": *"f32"' "$T/out" && ok || bad "--precision tf32: $(head -c 300 "$T/out")"
# Options come from each command's table: a flag the table stores, a
# missing argument and an unknown option are told apart.
expect_exit 2 "$NTPROF" run "$SRC/models/tiny-mlp.xml" --counter-iterations=0
expect_err "--counter-iterations expects a positive integer, got '0'"
expect_exit 2 "$NTPROF" history --limit x
expect_err "--limit expects a positive integer, got 'x'"
expect_exit 2 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --bogus
expect_in_err "unrecognized option '--bogus'"
expect_in_err "see 'ntprof analyze --help'"
expect_exit 0 "$NTPROF" run --help
grep -q -- '^  -i, --input \[NAME=\]FILE a graph input' "$T/out" && grep -q -- '^      --wait-policy P ' "$T/out" \
    && ok || bad "run --help: $(cat "$T/out")"

# Analysis as JSON: exact totals of a hand-counted model.
expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --format json -o "$T/a.json"
$PY - "$T/a.json" <<'PYEOF' && ok || bad "analysis JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["totals"]["params"] == 3296, d["totals"]["params"]
assert d["layers"][0]["name"] == "stage", d["layers"][0]["name"]
assert all(l["flops"] >= 0 for l in d["layers"])
PYEOF
expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --format csv
head -1 "$T/out" | grep -q '^name,type' && ok || bad "CSV header: $(head -1 "$T/out")"
expect_exit 0 "$NTPROF" analyze "$SRC/models/resnet50.xml"
$PY -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 100 for l in open(sys.argv[1], encoding="utf-8")))' "$T/out" \
    && ok || bad "analyze table wider than 100 columns"

# Failures: one line naming file and line, exit 1, no output file.
printf '<topology name="t">\n<input name="x" shape="1,4"/>\n<fc name="f" unitz="3"/>\n</topology>\n' >"$T/bad.xml"
expect_exit 1 "$NTPROF" analyze "$T/bad.xml" -o "$T/never.json"
expect_err "bad.xml:3:"
[ ! -e "$T/never.json" ] && ok || bad "a failed analyze left $T/never.json"
ls "$T" | grep -q 'never.json' && bad "temporary file left behind" || ok
expect_exit 1 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --set hiden=4
expect_err "did you mean 'hidden'?"
expect_exit 1 "$NTPROF" analyze "$T/missing.xml"
expect_err "missing.xml"
expect_exit 1 "$NTPROF" analyze "$SRC/models/resnet50.xml" --max-memory 1M
expect_err "memory budget"

# A run: JSON report, Chrome trace, saved outputs, a partial run.
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 4 --min-time 0 -w 1 \
    --format json -o "$T/r.json" --trace "$T/t.json" --save-outputs "$T/outs"
$PY - "$T/r.json" "$T/t.json" <<'PYEOF' && ok || bad "run JSON or trace"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["config"]["backend"] == "ref"
assert len(r["layers"]) == 11, len(r["layers"])
assert r["end_to_end"]["median_ms"] > 0
assert "overhead_fraction" in r
t = json.load(open(sys.argv[2]))
names = {e["name"] for e in t["traceEvents"] if e.get("ph") == "X"}
assert "fc1" in names and "probs" in names, names
PYEOF
$PY - "$T/t.json" <<'PYEOF' && ok || bad "trace does not start at ts 0"
import json, sys
t = json.load(open(sys.argv[1]))
ts = [e["ts"] for e in t["traceEvents"] if e.get("ph") == "X"]
assert min(ts) == 0, min(ts)
first = [e for e in t["traceEvents"] if e.get("ph") == "X"][0]
assert first["ts"] == 0 and first["name"] == "iteration 0", first
PYEOF
[ -s "$T/outs/output_0.npy" ] && ok || bad "no output_0.npy"
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -n 3 --min-time 0 --only body
grep -q 'fc1' "$T/out" && ! grep -q 'probs' "$T/out" && ok || bad "--only body table"
expect_exit 1 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -n 1 --min-time 0 --only nope -o "$T/never2.json"
expect_err "no marker 'nope'"
[ ! -e "$T/never2.json" ] && ok || bad "a failed run left a report"

# Output folders and the history database are checked before the run, as -o
# is (DeepSpeech takes seconds to measure: each refusal comes first, with
# one line, and writes nothing).
DS="$SRC/models/deepspeech.xml"
touch "$T/plain"
expect_exit 1 "$NTPROF" run "$DS" --no-db --save-outputs "$T/none/outs"
expect_err "ntprof: --save-outputs: cannot create '$T/none/outs': folder '$T/none': No such file or directory"
expect_exit 1 "$NTPROF" run "$DS" --no-db --save-outputs "$T/plain"
expect_err "ntprof: --save-outputs: cannot write into '$T/plain': not a folder"
expect_exit 1 "$NTPROF" run "$DS" --no-db --tool perf-stat --tool-dir "$T/none/tools"
expect_err "ntprof: --tool-dir: cannot create '$T/none/tools': folder '$T/none': No such file or directory"
expect_exit 1 "$NTPROF" run "$DS" --db "$T/h.db" -o "$T/./h.db"
expect_err "ntprof: -o: '$T/./h.db' is the same file as --db '$T/h.db'; give each output its own file"
[ ! -e "$T/h.db" ] && ok || bad "a refused run wrote $T/h.db"
mkdir -p "$T/home/.local/share/ntprof"
HOME="$T/home" XDG_DATA_HOME= expect_exit 1 "$NTPROF" run "$DS" -o "$T/home/.local/share/ntprof/history.db"
expect_err "ntprof: -o: '$T/home/.local/share/ntprof/history.db' is the same file as the default history database"
HOME="$T/home" XDG_DATA_HOME= expect_exit 1 "$NTPROF" machine -o "$T/home/.local/share/ntprof/history.db"
expect_err "is the same file as the default history database"
expect_exit 1 "$NTPROF" compare "$T/a.json" "$T/b.json" --db "$T/h.db" -o "$T/h.db"
expect_err "ntprof: -o: '$T/h.db' is the same file as --db '$T/h.db'; give each output its own file"
expect_exit 1 "$NTPROF" sweep "$DS" --vary batch=1,2 --db "$T/h.db" -o "$T/./h.db"
expect_err "ntprof: -o: '$T/./h.db' is the same file as --db '$T/h.db'; give each output its own file"
[ ! -e "$T/h.db" ] && ok || bad "a refused sweep wrote $T/h.db"
HOME="$T/home" XDG_DATA_HOME= expect_exit 1 "$NTPROF" sweep "$DS" --vary batch=1,2 --html "$T/home/.local/share/ntprof/history.db"
expect_err "ntprof: --html: '$T/home/.local/share/ntprof/history.db' is the same file as the default history database"

# --threads 0 is all cores, as documented; more threads than CPUs is warned
# about, once (a report in a file: the warnings go to stderr).
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref --threads 0 -n 1 -w 0 --min-time 0 --no-db
over=$(( $(nproc) * 4 ))
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref --threads $over -n 5 -w 0 --min-time 0 \
    --no-db -f json -o "$T/over.json"
[ "$(grep -c "$over threads on $(nproc) CPU.*oversubscribed" "$T/err")" = 1 ] && ok \
    || bad "--threads $over on $(nproc) CPUs: want one oversubscription warning: $(cat "$T/err")"
expect_exit 2 "$NTPROF" run "$SRC/models/tiny-mlp.xml" --threads -1
expect_err "--threads expects a number of threads (0: all cores), got '-1'"

# Warnings print once: a table on stdout ends with them, and stderr does
# not repeat them (the library's warnings, such as this one, are in the
# report and in the context the CLI reads).
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref --threads $over -n 2 -w 0 --min-time 0 --no-db
[ "$(cat "$T/out" "$T/err" | grep -c 'oversubscribed')" = 1 ] && ok \
    || bad "the warning is not printed exactly once: $(cat "$T/err" "$T/out")"
# A fallback to ref (XNNPACK runs no recurrent layer) is one warning, in the table.
if "$NTPROF" run --help | grep -q 'built: .*xnnpack'; then
    expect_exit 0 "$NTPROF" run "$SRC/models/tiny-rnn.xml" -B xnnpack -n 2 -w 0 --min-time 0 --no-db
    [ "$(cat "$T/out" "$T/err" | grep -c "layer 'gru' (gru) runs on ref")" = 1 ] && ok \
        || bad "the fallback warning is not printed exactly once: $(cat "$T/err")"
fi
# An inlay no backend but ref runs is not a fallback to warn about.
printf '<topology name="t">\n<input name="x" shape="6,1,29" dtype="f32"/>\n<ctc_decode name="dec" mode="greedy"/>\n</topology>\n' >"$T/ctc.xml"
expect_exit 0 "$NTPROF" run "$T/ctc.xml" -n 5 -w 0 --min-time 0 --no-db
! grep -q "runs on ref" "$T/out" "$T/err" && ok || bad "an inlay warned about running on ref: $(cat "$T/err")"

# --min-time is what each pass's samples add up to: the end-to-end times
# alone span it.
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 1 -w 0 --min-time 0.3 --no-db \
    -f json -o "$T/mt.json"
$PY - "$T/mt.json" <<'PYEOF' && ok || bad "--min-time 0.3: end-to-end samples too short"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["end_to_end"]
# The mean times the count is the samples' sum; only the cap of 100,000
# iterations stops it short (tiny-mlp ran 2.97 us an iteration on an Intel
# Xeon, 2026-12-07), and then a warning says so.
total = e["mean_ms"] * r["config"]["iterations"] / 1000
capped = [w for w in r["warnings"] if w.startswith("stopped at the cap of 100000 iterations")]
assert total >= 0.3 or (r["config"]["iterations"] == 100000 and capped), \
    (total, r["config"]["iterations"], e["mean_ms"], r["warnings"])
assert total < 0.3 or not capped, (total, capped)
PYEOF

# Sizes: SI with B (kB = 1000), binary alone or with iB; tiny-mlp needs
# exactly 14720 bytes (13184 of weights, a 1536-byte arena).
for ok_size in 14720 14720B 14.72kB 14.375KiB 14.375k; do
    expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --max-memory $ok_size
done
for small in 14719B 14.719kB 14.374KiB; do
    expect_exit 1 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --max-memory $small
    expect_err "memory budget"
done
expect_exit 1 "$NTPROF" analyze "$SRC/models/resnet50.xml" --max-memory 10MB
expect_err "more than the memory budget of 9.5 MiB"
expect_exit 1 "$NTPROF" analyze "$SRC/models/resnet50.xml" --max-memory 10MiB
expect_err "more than the memory budget of 10.0 MiB"
for bad_size in 10Mb 10x 10MBB -1M 0x10M 'inf' '10 MB'; do
    expect_exit 2 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --max-memory "$bad_size"
    expect_err "--max-memory expects a size"
done

# Backend names match case-insensitively; a misspelling gets a suggestion.
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B REF -n 1 -w 0 --min-time 0 --no-db \
    -f json -o "$T/ref.json"
$PY -c 'import json,sys; assert json.load(open(sys.argv[1]))["config"]["backend"] == "ref"' "$T/ref.json" \
    && ok || bad "-B REF did not run ref"
expect_exit 1 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B rfe -n 1 --no-db
expect_err "did you mean 'ref'?"

# Progress: on a terminal a line with the phase, the count and an ETA;
# nothing when stderr is a pipe or a file.
if command -v script >/dev/null; then
    script -qfec "$NTPROF run $SRC/models/tiny-mlp.xml -B ref -n 50 -w 2 --min-time 0.3 --no-db -o $T/tty.txt" \
        "$T/typescript" >/dev/null 2>&1
    grep -q 'ntprof: \[.*\] [0-9]*/[0-9]* measure ETA' "$T/typescript" && ok \
        || bad "no progress line on a terminal: $(tr '\r' '\n' <"$T/typescript" | tail -3)"
    grep -q 'warm-up' "$T/typescript" && ok || bad "no warm-up phase in the progress"
    [ -s "$T/tty.txt" ] && ok || bad "the run under a terminal wrote no report"
    # sweep and machine draw the same line (one helper for all three).
    script -qfec "$NTPROF sweep $SRC/models/tiny-mlp.xml --vary batch=1,2 -B ref -n 1 -w 0 --min-time 0 --no-db -o $T/sw.txt" \
        "$T/typescript" >/dev/null 2>&1
    grep -q 'ntprof: \[.*\] [12]/2 sweep ETA' "$T/typescript" && ok \
        || bad "no sweep progress line on a terminal: $(tr '\r' '\n' <"$T/typescript" | tail -3)"
else
    echo "SKIP: progress on a terminal (no script(1))"
fi
"$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 50 -w 2 --min-time 0.3 --no-db -o "$T/pipe.txt" 2>&1 | cat >"$T/piped"
# (Warnings may go there, such as a busy machine's noise; progress may not.)
! grep -q -e $'\r' -e 'ETA' -e 'warm-up' "$T/piped" && ok || bad "progress on a pipe: $(head -c 300 "$T/piped" | cat -v)"

# The library's errors worded from their parts (ntp_ctx_error_part): the
# option at fault named by its flag, with the rest word for word, and a
# markup error by its file and line.
MLP="$SRC/models/tiny-mlp.xml"
expect_exit 1 "$NTPROF" run "$MLP" -B ref --place =ref -n 1 -w 0 --min-time 0 --no-db
expect_err "ntprof: --place expects LAYER=BACKEND, got '=ref'"
expect_exit 1 "$NTPROF" run "$MLP" -B ref --pin x -n 1 -w 0 --min-time 0 --no-db
expect_err "ntprof: --pin expects a CPU list such as 0-1,3; got 'x'"
expect_exit 1 "$NTPROF" analyze "$T/bad.xml"
expect_err "ntprof: $T/bad.xml:3: unknown attribute 'unitz' on <fc>; did you mean 'units'?"

finish
