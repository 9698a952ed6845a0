#!/usr/bin/env bash
# A local sweep recording into a PostgreSQL history (scripts/local-postgres.sh)
# loses no result when the store fails under it:
#  - the server restarted in the middle of the sweep: the sweep's one
#    connection is re-established, says so, and every configuration's run is
#    stored once (its own hidden value, no duplicate);
#  - a run the server refuses (a trigger standing in for a full disk): the
#    sweep names the configuration, keeps its report, exits 1 saying how to
#    add what is missing, and `history import` of the directory it names
#    adds exactly that run (the others, already stored, are not duplicated).
# Usage: test_pg_sweep_restart_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)

pg_server_up '[ -n "${WATCH:-}" ] && kill "$WATCH" 2>/dev/null'
sql() { "$PSQL" -X -q -t -A -d "$SOCK" -c "$1" 2>/dev/null; }
export TMPDIR=$T

# 1. The server restarted once two of five runs are stored.
# --no-record reads the store (here: makes its schema) and records nothing.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --no-record
[ "$(sql 'SELECT count(*) FROM runs')" = 0 ] && ok || bad "--no-record recorded: $(sql 'SELECT count(*) FROM runs')"
(
    for _ in $(seq 600); do
        [ "$(sql 'SELECT count(*) FROM runs')" -ge 2 ] 2>/dev/null && break
        sleep 0.05
    done
    "$PGUP" restart "$PGDIR" >"$T/restart.out" 2>&1 && echo restarted >"$T/restarted"
) &
WATCH=$!
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=1,2,3,4,5 "${FAST[@]}" --db "$URL" \
    --format csv -o "$T/s1.csv"
wait "$WATCH"
WATCH=
hidden() { sql "SELECT string_agg(params::json->>'hidden', ' ' ORDER BY id) FROM runs"; }
[ -e "$T/restarted" ] && ok || bad "the restart: $(cat "$T/restart.out")"
expect_in_err "the connection was lost"
expect_in_err "the run was written again"
[ "$(hidden)" = '1 2 3 4 5' ] && ok || bad "stored runs' hidden: $(hidden), want 1 2 3 4 5"
[ "$(sql 'SELECT count(DISTINCT uuid) FROM runs')" = 5 ] && ok || bad "UUIDs: $(sql 'SELECT uuid FROM runs')"
[ "$(grep -c ',ok,' "$T/s1.csv")" = 5 ] && ok || bad "sweep table: $(cat "$T/s1.csv")"
# The rows of each run are there (one INSERT carries them on PostgreSQL).
[ "$(sql 'SELECT count(DISTINCT run_id) FROM rows')" = 5 ] && ok || bad "rows: $(sql 'SELECT run_id, count(*) FROM rows GROUP BY run_id')"
ls "$T" | grep -q '^ntprof-sweep-' && bad "the sweep left $(ls "$T")" || ok

# 2. The server refuses hidden=2's run for good (not a lost connection,
#    so not retried).
sql 'DELETE FROM runs'
sql "CREATE FUNCTION refuse() RETURNS trigger AS \$\$ BEGIN
     IF NEW.params::json->>'hidden' = '2' THEN RAISE EXCEPTION 'no space left (test)'; END IF;
     RETURN NEW; END \$\$ LANGUAGE plpgsql;
     CREATE TRIGGER refuse BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION refuse()"
expect_exit 1 "$NTPROF" sweep "$MLP" --vary hidden=1,2,3 "${FAST[@]}" --db "$URL" \
    --format csv -o "$T/s2.csv"
expect_in_err "sweep hidden=2: not recorded: history postgresql://ntprof:***@127.0.0.1"
expect_in_err "no space left (test)"
expect_in_err "1 of 3 runs were not recorded"
[ "$(grep -c ',ok,' "$T/s2.csv")" = 3 ] && ok || bad "sweep table: $(cat "$T/s2.csv")"
[ "$(hidden)" = '1 3' ] && ok || bad "stored runs' hidden: $(hidden), want 1 3"
KEPT=$(sed -n 's/.*ntprof history import --db URL \(.*\)\/config-\*\.json$/\1/p' "$T/err")
[ "$(cd "$KEPT" 2>/dev/null && echo config-*)" = config-1.json ] && ok || bad "kept in '$KEPT': $(ls "$KEPT" 2>&1)"
sql 'DROP TRIGGER refuse ON runs'
expect_exit 0 "$NTPROF" history import --db "$URL" "$KEPT"/config-*.json
[ "$(hidden)" = '1 3 2' ] && ok || bad "after the import: $(hidden), want 1 3 2"

finish test_pg_sweep_restart_cli
