#!/usr/bin/env bash
# The shared PostgreSQL history (docs/cluster.md) against a real server that
# scripts/local-postgres.sh starts in a temporary directory: runs recorded
# over TCP (password) and the Unix socket, listed by `history` with the
# medians of their reports, compared by id, `machine` reading its cache
# there; `history copy` to SQLite and back, byte for byte and skipping what
# is present; a run written twice with one UUID stored once; the server
# restarted between writes losing nothing; an unreachable URL and a wrong
# password refused in one line naming the host, with nothing written
# anywhere; a schema from a newer ntprof refused.
# Usage: test_pgstore_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)

pg_server_up
case "$URL" in postgresql://ntprof:*@127.0.0.1:*/ntprof) ok ;; *) bad "last line of up: $URL" ;; esac
sql() { "$PSQL" -X -q -t -A -d "$SOCK" -c "$1"; }

# Three runs: two over TCP, one over the socket; the schema is made on the way.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --format json -o "$T/r1.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --set hidden=64 --format json -o "$T/r2.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$SOCK" --format json -o "$T/r3.json"
[ "$(sql 'SELECT version FROM schema_version')" = "$(sed -n 's/^#define NTP_STORE_SCHEMA_VERSION \([0-9]*\).*/\1/p' "$SRC/include/ntprof/store.h")" ] &&
    ok || bad "schema_version: $(sql 'SELECT version FROM schema_version')"
expect_exit 0 "$NTPROF" history --db "$URL" --format json -o "$T/h.json"
$PY - "$T/h.json" "$T"/r[123].json <<'PYEOF' && ok || bad "history JSON against the reports"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
reps = [json.load(open(p)) for p in sys.argv[2:]]
assert [r["id"] for r in runs] == [3, 2, 1], runs
for run, rep in zip(reversed(runs), reps):
    assert run["median_ms"] == rep["end_to_end"]["median_ms"], (run, rep["end_to_end"])
    assert run["layers"] == len(rep["layers"])
PYEOF
# Each run's UUID, from its report, is in its row.
for i in 1 2 3; do
    u=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"]["run_uuid"])' "$T/r$i.json")
    [ "$(sql "SELECT id FROM runs WHERE uuid = '$u'")" = "$i" ] && ok || bad "run $i's UUID $u not stored"
done
# The stored report is the report, byte for byte (the CLI reformats nothing).
expect_exit 0 "$NTPROF" history --db "$URL" --show 2 --format json -o "$T/show2.json"
cmp -s "$T/show2.json" "$T/r2.json" && ok || bad "history --show 2 differs from the run's report"
[ "$(sql 'SELECT count(*) FROM rows WHERE run_id = 1')" = "$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["layers"]))' "$T/r1.json")" ] &&
    ok || bad "rows of run 1"
expect_exit 0 "$NTPROF" compare --db "$URL" 1 2
grep -q '^B = run 2: tiny-mlp' "$T/out" && ok || bad "compare by id: $(head -3 "$T/out")"
# machine: nothing cached yet; described without measuring, from this store.
expect_exit 0 "$NTPROF" machine --db "$URL" --no-measure --format json
$PY -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m.get("ceilings") in (None, {}), m' "$T/out" &&
    ok || bad "machine --no-measure: $(head -c 300 "$T/out")"

# A retried write: the same UUID twice is one row.
RU=0f8fad5b-d9cb-469f-a165-70867728950e
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --run-uuid "$RU"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --run-uuid "$RU"
[ "$(sql "SELECT count(*) FROM runs WHERE uuid = '$RU'")" = 1 ] && ok || bad "UUID $RU stored $(sql "SELECT count(*) FROM runs WHERE uuid = '$RU'") times"
[ "$(sql 'SELECT count(*) FROM runs')" = 4 ] && ok || bad "runs: $(sql 'SELECT count(*) FROM runs'), want 4"
# A sweep records each configuration there (two runs, then removed again
# so the counts below stay those of the runs above).
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8,16 "${FAST[@]}" --db "$URL"
[ "$(sql 'SELECT count(*) FROM runs WHERE id > 4')" = 2 ] && ok || bad "sweep rows: $(sql 'SELECT id, params FROM runs')"
sql 'DELETE FROM runs WHERE id > 4'

# Copy to SQLite, again (nothing new), a run added there, copied back.
LITE=$T/lite.db
expect_exit 0 "$NTPROF" history copy --from "$URL" --to "$LITE"
grep -q '^4 runs copied, 0 already present' "$T/out" && ok || bad "copy to SQLite: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history copy --from "$URL" --to "$LITE"
grep -q '^0 runs copied, 4 already present' "$T/out" && ok || bad "copy again: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history --db "$LITE" --show 2 --format json -o "$T/lite2.json"
cmp -s "$T/lite2.json" "$T/r2.json" && ok || bad "the copied report differs"
expect_exit 0 "$NTPROF" history --db "$LITE" --format json -o "$T/hl.json"
$PY - "$T/h.json" "$T/hl.json" <<'PYEOF' && ok || bad "the SQLite copy's listing"
import json, sys
pg = {r["id"]: r for r in json.load(open(sys.argv[1]))["runs"]}
lite = {r["id"]: r for r in json.load(open(sys.argv[2]))["runs"]}
assert len(lite) == 4, lite.keys()
for i in (1, 2, 3):
    for k in ("median_ms", "ci95_ms", "throughput_per_s", "topology", "time", "machine", "layers"):
        assert pg[i][k] == lite[i][k], (i, k, pg[i][k], lite[i][k])
PYEOF
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$LITE"
expect_exit 0 "$NTPROF" history copy --from "$LITE" --to "$URL"
grep -q '^1 run copied, 4 already present' "$T/out" && ok || bad "copy back: $(cat "$T/out")"

# The server restarted between writes: every run is there.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL"
"$PGUP" restart "$PGDIR" >/dev/null 2>"$T/rerr" && ok || bad "restart: $(cat "$T/rerr")"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL"
[ "$(sql 'SELECT count(*) FROM runs')" = 7 ] && ok || bad "after the restart: $(sql 'SELECT count(*) FROM runs') runs, want 7"
# ... and while the server is down when a run starts and back a moment
# later: the run waits for it (retrying with backoff), says so, and is stored.
"$PGUP" stop "$PGDIR" >/dev/null 2>&1
"$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" >"$T/out" 2>"$T/err" &
RUN=$!
sleep 1
"$PGUP" start "$PGDIR" >/dev/null 2>&1
wait $RUN && ok || { bad "the run during a restart failed"; cat "$T/err"; }
expect_in_err "connected after"
[ "$(sql 'SELECT count(*) FROM runs')" = 8 ] && ok || bad "after a restart during a run: $(sql 'SELECT count(*) FROM runs') runs, want 8"

# Load runs: recorded in PostgreSQL, copied to SQLite and back, each once,
# the two listings then the same (times and figures exact).
LOADQ=("$SRC/models/serve-delay.xml" -s base_us=100 --scenario single-stream -B ref --duration 0
    --warmup 1 --min-queries 20)
expect_exit 0 "$NTPROF" load "${LOADQ[@]}" --db "$URL"
expect_exit 0 "$NTPROF" history copy --from "$URL" --to "$T/lite-load.db"
grep -q '^1 load run copied, 0 already present' "$T/out" && ok || bad "load copy to SQLite: $(cat "$T/out")"
expect_exit 0 "$NTPROF" load "${LOADQ[@]}" --db "$T/lite-load.db"
expect_exit 0 "$NTPROF" history copy --from "$T/lite-load.db" --to "$URL"
grep -q '^1 load run copied, 1 already present' "$T/out" && ok || bad "load copy back: $(cat "$T/out")"
[ "$(sql 'SELECT count(*) FROM load_runs')" = 2 ] && ok || bad "load runs in PostgreSQL: $(sql 'SELECT count(*) FROM load_runs')"
expect_exit 0 "$NTPROF" history --db "$URL" --load -f json -o "$T/pgl.json"
expect_exit 0 "$NTPROF" history --db "$T/lite-load.db" --load -f json -o "$T/ll.json"
cmp -s "$T/pgl.json" "$T/ll.json" && ok || bad "the load listings differ: $(diff "$T/pgl.json" "$T/ll.json" | head -5)"

# A load sweep recorded in PostgreSQL, copied to SQLite with its load runs
# (each configuration pointing to its own run's copy) and back, once.
expect_exit 0 "$NTPROF" sweep "$SRC/models/serve-delay.xml" --load --scenario single-stream -B ref \
    --duration 0 --warmup 1 --min-queries 20 --vary base_us=50,100 --db "$URL" -o "$T/pgsw.txt"
expect_exit 0 "$NTPROF" history copy --from "$URL" --to "$T/lite-load.db"
grep -q '^2 load runs copied, 2 already present' "$T/out" && grep -q '^1 sweep copied, 0 already present' "$T/out" &&
    ok || bad "load sweep copy to SQLite: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history copy --from "$T/lite-load.db" --to "$URL"
grep -q '^0 sweeps copied, 1 already present' "$T/out" && ok || bad "load sweep copy back: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history --db "$URL" --load-sweeps -f json -o "$T/pgs.json"
expect_exit 0 "$NTPROF" history --db "$T/lite-load.db" --load-sweeps -f json -o "$T/ls.json"
$PY - "$T/pgs.json" "$T/ls.json" "$T/pgl.json" "$T/lite-load.db" <<'PYEOF' && ok || bad "the copied load sweep differs"
import json, sqlite3, sys
pg, li = (json.load(open(f))["load_sweeps"] for f in sys.argv[1:3])
assert len(pg) == 1 and len(li) == 1, (pg, li)
strip = lambda s: {k: v for k, v in s.items() if k not in ("id", "configurations")}
assert strip(pg[0]) == strip(li[0]), (pg, li)
cs = lambda s: [(c["index"], c["state"], c["configuration"]) for c in s["configurations"]]
assert cs(pg[0]) == cs(li[0]) and [c[1] for c in cs(li[0])] == ["ok", "ok"], (pg, li)
db = sqlite3.connect(sys.argv[4])
for c in li[0]["configurations"]:
    rep = json.loads(db.execute("SELECT report FROM load_runs WHERE id = ?", (c["load_run_id"],)).fetchone()[0])
    assert rep["kind"] == "load" and rep["scenario"] == "single-stream", rep["kind"]
PYEOF

# Bad input: one line naming the host and why; nothing measured, nothing written.
PORT=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' <<<"$URL")
DEAD=1
NTP_DB_RETRY_MS=300 expect_exit 1 "$NTPROF" run "$MLP" "${FAST[@]}" --db "postgresql://ntprof@127.0.0.1:$DEAD/ntprof" -o "$T/dead.json"
expect_err '"127.0.0.1", port 1 failed: Connection refused'
[ ! -e "$T/dead.json" ] && ok || bad "a report was written for an unreachable store"
BADPW="postgresql://ntprof:wrong@127.0.0.1:$PORT/ntprof"
expect_exit 1 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$BADPW" -o "$T/pw.json"
expect_err 'password authentication failed for user "ntprof"'
expect_in_err 'postgresql://ntprof:***@127.0.0.1'
grep -q wrong "$T/err" && bad "the password is shown: $(cat "$T/err")" || ok
[ ! -e "$T/pw.json" ] && ok || bad "a report was written for a refused store"
expect_exit 1 "$NTPROF" history --db "$BADPW"
expect_err "password authentication failed"
[ "$(sql 'SELECT count(*) FROM runs')" = 8 ] && ok || bad "runs after the refusals: $(sql 'SELECT count(*) FROM runs')"

# A schema from a newer ntprof: refused for reading and writing, not touched.
sql 'UPDATE schema_version SET version = 999'
expect_exit 1 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL"
expect_err "schema version 999 is newer than this ntprof's"
expect_exit 1 "$NTPROF" history --db "$URL"
expect_err "a newer history than this ntprof reads"
[ "$(sql 'SELECT version FROM schema_version')" = 999 ] && ok || bad "the newer schema was changed"

finish test_pgstore_cli
