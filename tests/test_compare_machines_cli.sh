#!/usr/bin/env bash
# Hardware comparison across a fleet (docs/compare.md): `compare --machine A
# --machine B` over an SQLite history holding runs of two machine identities
# (this one, and a second one imported with `history import` from reports
# whose environment names another machine). It must pick each machine's
# newest run of the newest configuration both ran (not A's newest run, which
# B never ran), and its rows and ratios must be the runs' own medians; the
# HTML shows both machines. Bad input: an unknown machine (one line listing
# the known ones), no configuration both ran, no run matching a filter, one
# machine only, filters without --machine.
# Usage: test_compare_machines_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 5 --warmup 1 --min-time 0 --no-accuracy --backend ref --no-db)
DB=$T/fleet.db

# Four reports: A batch 1, two B batch 1 (older, newer), A batch 4 (newest).
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --batch 1 --format json -o "$T/a1.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --batch 1 --format json -o "$T/b-old.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --batch 1 --format json -o "$T/b-new.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --batch 4 --format json -o "$T/a2.json"
# B's reports become another machine's: CPU, cores, host and a fresh UUID.
$PY - "$T/b-old.json" "$T/b-new.json" <<'PYEOF' && ok || bad "rewriting B's reports"
import json, sys, uuid
for p in sys.argv[1:]:
    r = json.load(open(p))
    e = r["environment"]
    e["cpu_model"], e["cores"], e["hostname"] = "Fleet Test CPU 9000", 64, "node-b"
    e["run_uuid"] = str(uuid.uuid4())
    json.dump(r, open(p, "w"))
PYEOF
expect_exit 0 "$NTPROF" history import "$T/a1.json" "$T/b-old.json" "$T/b-new.json" "$T/a2.json" --db "$DB"
grep -q "b-new.json: run 3" "$T/out" && ok || bad "import output: $(cat "$T/out")"
# Importing again stores nothing twice.
expect_exit 0 "$NTPROF" history import "$T/a1.json" --db "$DB"
grep -q "a1.json: run 1" "$T/out" && ok || bad "re-import output: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history --db "$DB" --format json -o "$T/h.json"
HOST=$(hostname)
$PY - "$T/h.json" <<'PYEOF' && ok || bad "history after import"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [r["id"] for r in runs] == [4, 3, 2, 1], [r["id"] for r in runs]
assert runs[1]["machine"] == "Fleet Test CPU 9000|64|node-b", runs[1]
PYEOF
AKEY=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["machine"])' "$T/h.json")

# A by its host name, B by its key's host part; MODEL by topology name.
expect_exit 0 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine node-b tiny-mlp \
    --format json -o "$T/c.json" --html "$T/c.html"
$PY - "$T/c.json" "$T/a1.json" "$T/b-new.json" "$AKEY" <<'PYEOF' && ok || bad "lined-up rows against the runs' reports"
import json, sys
c = json.load(open(sys.argv[1]))
a, b = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
akey = sys.argv[4]
runs = c["runs"]
assert [r["label"] for r in runs] == [akey + " (run 1)", "Fleet Test CPU 9000|64|node-b (run 3)"], runs
assert runs[1]["hostname"] == "node-b" and runs[0]["batch"] == runs[1]["batch"] == 1, runs
p = c["pairs"][0]
assert p["end_to_end"]["base"]["median_ms"] == a["end_to_end"]["median_ms"]
assert p["end_to_end"]["other"]["median_ms"] == b["end_to_end"]["median_ms"]
la = {l["name"]: l for l in a["layers"]}
lb = {l["name"]: l for l in b["layers"]}
rows = [r for r in p["layers"] if r["name"] in la]
assert len(rows) == len(la) > 2, (len(rows), len(la))
for r in rows:
    am, bm = la[r["name"]]["median_ms"], lb[r["name"]]["median_ms"]
    assert r["status"] == "matched", r
    assert r["base"]["median_ms"] == am and r["other"]["median_ms"] == bm, (r, am, bm)
    if bm > 0:
        assert abs(r["speedup"] - am / bm) <= 1e-9 * (am / bm), (r["speedup"], am / bm)
    assert abs(r["delta_ms"] - (bm - am)) <= 1e-12 + 1e-9 * abs(bm - am), r
assert any("hostname" in d or "host" in d for d in p["differences"]), p["differences"]
PYEOF
grep -q "Layer times side by side" "$T/c.html" && grep -q "node-b" "$T/c.html" &&
    grep -qF "$HOST" "$T/c.html" && ! grep -qE '(src|href)="https?:' "$T/c.html" && ok ||
    bad "HTML lacks both machines' per-layer profile, or loads from the network"
# The table names both machines.
expect_exit 0 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine node-b
grep -q "Fleet Test CPU 9000|64|node-b (run 3)" "$T/out" && grep -qF "$AKEY (run 1)" "$T/out" && ok ||
    bad "table: $(head -5 "$T/out")"
# B first: the same runs the other way round.
expect_exit 0 "$NTPROF" compare --db "$DB" --machine node-b --machine "$AKEY" --format json -o "$T/c2.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]; assert [x["label"][-7:] for x in r]==["(run 3)","(run 1)"], r' \
    "$T/c2.json" && ok || bad "B first"

# Bad input.
expect_exit 1 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine nosuch
expect_err "no runs of a machine 'nosuch'; machines with runs: '$AKEY' (2 runs), 'Fleet Test CPU 9000|64|node-b' (2 runs)"
expect_exit 1 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine node-b --batch 4
expect_err "no configuration of any topology, batch 4 (topology, backend, precision, batch) was run on every machine given"
expect_exit 1 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine node-b --backend onednn
expect_err "machine '$AKEY' has no run of any topology, backend onednn"
expect_exit 1 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine node-b resnet50
expect_err "has no run of resnet50"
expect_exit 2 "$NTPROF" compare --db "$DB" --machine "$HOST"
expect_err "needs two machines or more"
expect_exit 2 "$NTPROF" compare "$T/a1.json" "$T/a2.json" --backend ref
expect_err "choose runs for --machine"
expect_exit 1 "$NTPROF" compare --db "$DB" --machine "$HOST" --machine "$AKEY"
expect_err "are the same machine"
expect_exit 1 "$NTPROF" history import "$T/nothere.json" --db "$T/other.db"
[ ! -e "$T/other.db" ] && ok || bad "a failed import created its store"

finish test_compare_machines_cli
