#!/usr/bin/env bash
# External tools steered by ntprof (docs/counters.md), for real: perf stat
# counting only inside a marked layer, perf record, callgrind instruction
# counts that scale with a layer's work, cachegrind's simulated misses,
# PAPI, NVTX, hardware events reported n/a, `ntprof counters`, and the JSON
# validated against the schema.
# Usage: test_tools.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"
# run CMD...: expect exit 0, keep stdout and stderr.
run() {
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ $rc = 0 ]; then ok; else bad "exit $rc: $*"; cat "$T/err"; fi
    return $rc
}
# schema FILE: the run report validates against schema/report.schema.json.
schema() {
    $PY - "$SRC/schema/report.schema.json" "$1" <<'PYEOF' && ok || bad "schema: $1"
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(s)
errs = list(cls(s).iter_errors(json.load(open(sys.argv[2]))))
for e in errs[:5]:
    print("schema:", list(e.absolute_path), e.message[:200])
sys.exit(1 if errs else 0)
PYEOF
}

# width FILE: no line wider than 100 columns (characters, not bytes: "µs").
width() {
    $PY -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 100 for l in open(sys.argv[1], encoding="utf-8")))' "$1"
}

# The tools are declared dependencies (scripts/deps.sh): missing is a failure.
PERF=$(command -v perf || ls /usr/bin/perf_[0-9]* 2>/dev/null | tail -1)
[ -n "$PERF" ] && ok || bad "perf is missing: install linux-perf (scripts/deps.sh)"
command -v valgrind >/dev/null && ok || bad "valgrind is missing: install valgrind (scripts/deps.sh)"
command -v papi_avail >/dev/null && ok || bad "papi_avail is missing: install papi-tools (scripts/deps.sh)"
# PyTorch is the truth of several tests, which skip without it: a machine that
# lacks it would pass the suite without judging what they check.
/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null && ok ||
    bad "PyTorch is missing: install python3-torch python3-torchvision (scripts/deps.sh)"
# valgrind cannot run a binary built with AddressSanitizer (-DNTP_SANITIZE=ON).
ASAN=0
if ldd "$NTPROF" 2>/dev/null | grep -q libasan || nm "$NTPROF" 2>/dev/null | grep -q __asan_init; then
    ASAN=1
fi
# Optional parts of the build (cmake/ntp-counters.cmake): without them the
# tool is refused with "built without ...", which is checked instead.
"$NTPROF" counters >"$T/probe" 2>&1 && ok || bad "ntprof counters failed: $(cat "$T/probe")"
NO_VG=0; NO_PAPI=0
grep -Eq '^  callgrind +n/a +built without' "$T/probe" && NO_VG=1
grep -Eq '^  papi +n/a +built without' "$T/probe" && NO_PAPI=1

# A small layer in a marker that perf counts, a big one outside it.
cat >"$T/pstat.xml" <<'EOF'
<topology name="pstat" precision="f32">
  <input name="x" shape="1,1024" dtype="f32"/>
  <fc name="small" units="512"/>
  <fc name="big" units="8192"/>
  <marker name="m" from="small" to="small" tool="perf-stat:task-clock,page-faults"/>
</topology>
EOF
# Two fc layers, the second with twice the multiply-accumulates of the first
# (512x256 = 131072 and 256x1024 = 262144), in a marker callgrind counts.
cat >"$T/cg.xml" <<'EOF'
<topology name="cg" precision="f32">
  <input name="x" shape="1,512" dtype="f32"/>
  <fc name="fc_a" units="256"/>
  <fc name="fc_b" units="1024"/>
  <marker name="both" from="fc_a" to="fc_b" tool="callgrind"/>
</topology>
EOF

# --- perf stat: task-clock inside the marked layer only -------------------------------
if run "$NTPROF" run "$T/pstat.xml" -B ref -n 5 -w 1 --min-time 0 --counters task-clock \
        --format json -o "$T/p.json"; then
    schema "$T/p.json"
    # The whole process of the same run without tools, for comparison.
    "$PERF" stat -x, -o "$T/whole.csv" -e task-clock -- \
        "$NTPROF" run "$T/pstat.xml" -B ref -n 5 -w 1 --min-time 0 >/dev/null 2>&1 \
        && ok || bad "perf stat of the whole run failed"
    $PY - "$T/p.json" "$T/whole.csv" <<'PYEOF' && ok || bad "perf-stat marker counts"
import json, sys
r = json.load(open(sys.argv[1]))
whole_ms = next(float(l.split(",")[0]) for l in open(sys.argv[2]) if ",task-clock," in l)
m = r["markers"][0]
assert m["name"] == "m", m["name"]
tc = m["counters"]["perf-stat:task-clock"]
assert tc["source"] == "perf-stat" and tc["unit"] == "ns", tc
pf = m["counters"]["perf-stat:page-faults"]
assert pf["value"] is not None, pf
it = r["counting"]["iterations"]
marker_ms = tc["value"] / 1e6
# Counted per iteration, close to the CPU time the in-process counters
# give the same layer (CPU time, unlike the wall-clock median, does not
# grow when the machine is busy; perf's control costs tens of microseconds
# per enable and disable)...
own_ms = r["layers"][0]["counters"]["task-clock"]["value"] / 1e6
print("marker task-clock under perf %.3f ms per iteration, in-process %.3f ms, median %.3f ms; "
      "%d iterations; whole run %.1f ms" % (marker_ms, own_ms, m["median_ms"], it, whole_ms))
assert 0.5 * own_ms <= marker_ms <= 2 * own_ms + 0.3, (marker_ms, own_ms)
# ...and far less than the whole run's, which runs the big layer too.
assert marker_ms * it < 0.2 * whole_ms, (marker_ms * it, whole_ms)
# The big layer outside the marker has no perf-stat figures.
big = [l for l in r["layers"] if l["name"] == "big"][0]
assert not any(k.startswith("perf-stat:") for k in big.get("counters", {})), big.get("counters")
assert any("perf-stat:" in n for n in r["counting"]["notes"]), r["counting"]["notes"]
PYEOF
fi

# --- perf stat on every layer, with an event the VM cannot count ----------------------------
if run "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 3 --min-time 0 \
        --tool perf-stat:task-clock,cycles --format json -o "$T/ps.json"; then
    schema "$T/ps.json"
    $PY - "$T/ps.json" <<'PYEOF' && ok || bad "perf-stat per layer"
import json, os, sys
r = json.load(open(sys.argv[1]))
pmu = os.path.exists("/sys/bus/event_source/devices/cpu")
for l in r["layers"]:
    c = l["counters"]
    assert c["perf-stat:task-clock"]["value"] > 0, (l["name"], c)
    cy = c["perf-stat:cycles"]
    if not pmu:
        assert cy["value"] is None and "not supported" in cy["reason"], cy
# The marker "body" sums its rows.
body = r["markers"][0]
rows = r["layers"][body["first"]:body["last"] + 1]
s = sum(l["counters"]["perf-stat:task-clock"]["value"] for l in rows)
assert abs(body["counters"]["perf-stat:task-clock"]["value"] - s) <= 1e-6 * s, (body, s)
PYEOF
fi

# --- perf record: samples only inside each layer, perf.data kept --------------------------------
if run "$NTPROF" run "$T/pstat.xml" -B ref -n 5 -w 1 --min-time 0 --tool perf-record \
        --tool-dir "$T/rec" --format json -o "$T/rec.json"; then
    schema "$T/rec.json"
    [ -s "$T/rec/perf.data" ] && ok || bad "no perf.data in $T/rec"
    $PY - "$T/rec.json" "$T/rec/perf.data" <<'PYEOF' && ok || bad "perf-record samples"
import json, sys
r = json.load(open(sys.argv[1]))
by = {l["name"]: l["counters"]["perf-record:cpu-clock-samples"]["value"] for l in r["layers"]}
print("perf-record samples per layer:", by)
assert by["big"] > 0 and by["big"] > by["small"], by
assert any(sys.argv[2] in n for n in r["counting"]["notes"]), r["counting"]["notes"]
PYEOF
    "$PERF" report -i "$T/rec/perf.data" --stdio >"$T/report.txt" 2>&1 && ok || bad "perf report failed"
    grep -q "ntp1.0" "$T/report.txt" && ok || bad "perf report lacks the big layer's event ntp1.0"
fi

# --- callgrind: instructions per layer scale with its work --------------------------------------
if [ $NO_VG = 1 ]; then
    echo "SKIP: callgrind and cachegrind figures (built without valgrind's headers)"
    "$NTPROF" run "$T/cg.xml" -B ref -n 1 --min-time 0 >/dev/null 2>"$T/err"
    [ $? = 1 ] && grep -q "built without valgrind's headers" "$T/err" && ok || bad "callgrind refusal: $(cat "$T/err")"
elif [ $ASAN = 1 ]; then
    echo "SKIP: callgrind and cachegrind (this ntprof is built with AddressSanitizer, which valgrind cannot run)"
    "$NTPROF" run "$T/cg.xml" -B ref -n 1 --min-time 0 >/dev/null 2>"$T/err"
    [ $? = 1 ] && grep -q "AddressSanitizer" "$T/err" && ok || bad "callgrind under ASan: $(cat "$T/err")"
else
    if run "$NTPROF" run "$T/cg.xml" -B ref -n 2 -w 1 --min-time 0 --format json -o "$T/cg.json"; then
        schema "$T/cg.json"
        $PY - "$T/cg.json" <<'PYEOF' && ok || bad "callgrind Ir scaling"
import json, sys
r = json.load(open(sys.argv[1]))
ir = {l["name"]: l["counters"]["callgrind:Ir"]["value"] for l in r["layers"]}
ratio = ir["fc_b"] / ir["fc_a"]
print("callgrind Ir fc_a %d, fc_b %d, ratio %.3f (MACs ratio 2)" % (ir["fc_a"], ir["fc_b"], ratio))
assert 1.5 <= ratio <= 2.5, ratio
# At least one instruction per multiply-accumulate.
assert ir["fc_a"] >= 131072, ir
m = r["markers"][0]
assert m["counters"]["callgrind:Ir"]["value"] == ir["fc_a"] + ir["fc_b"], m["counters"]
assert r["layers"][0]["bound"] in ("memory", "compute", "latency")
PYEOF
    fi
    # ntprof itself under valgrind: the probes around the window (with a
    # --min-time that would run them) would time valgrind's JIT: n/a.
    if run valgrind -q --tool=none "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 1 -w 0 \
            --min-time 0.5 --format json -o "$T/vg.json"; then
        $PY - "$T/vg.json" <<'PYEOF' && ok || bad "probes under valgrind"
import json, sys
c = json.load(open(sys.argv[1]))["environment"]["contention"]
for probe in ("bandwidth", "handoff"):
    assert not c[probe]["measured"] and "under valgrind" in c[probe]["reason"], c[probe]
PYEOF
    fi
    # cachegrind: simulated cache misses and branch mispredictions per layer.
    # -n 3, but the simulation counts one iteration: the report says one.
    if run "$NTPROF" run "$T/cg.xml" -B ref -n 3 --min-time 0 --tool cachegrind \
            --tool-dir "$T/cachegrind" --format json -o "$T/cgs.json"; then
        schema "$T/cgs.json"
        ls "$T/cachegrind"/callgrind.out.* >/dev/null 2>&1 && ok || bad "no callgrind dumps kept"
        $PY - "$T/cgs.json" <<'PYEOF' && ok || bad "cachegrind simulation"
import json, sys
r = json.load(open(sys.argv[1]))
for l in r["layers"]:
    c, m = l["counters"], l["metrics"]
    for k in ("cachegrind:Ir", "cachegrind:D1mr", "cachegrind:DLmr", "cachegrind:Bcm"):
        assert c[k]["value"] is not None, (l["name"], k)
    # fc_b reads 1 MB of weights: more D1 misses than the 512 KB of fc_a.
    for k in ("cachegrind:d1_mpki", "cachegrind:ll_mpki", "cachegrind:branch_mispredict_ratio"):
        assert m[k]["value"] is not None, (l["name"], k)
d1 = {l["name"]: l["counters"]["cachegrind:D1mr"]["value"] for l in r["layers"]}
assert d1["fc_b"] > d1["fc_a"] > 0, d1
notes = " ".join(r["counting"]["notes"])
assert "3.22" in notes and "--cache-sim=yes" in notes, notes
assert r["counting"]["iterations"] == 1, r["counting"]["iterations"]
assert "one counting iteration" in notes, notes
PYEOF
        # Deterministic: another run (cache simulation does not change the
        # instructions executed) counts the same instructions per layer.
        $PY - "$T/cg.json" "$T/cgs.json" <<'PYEOF' && ok || bad "callgrind determinism"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for x, y in zip(a["layers"], b["layers"]):
    va, vb = x["counters"]["callgrind:Ir"]["value"], y["counters"]["cachegrind:Ir"]["value"]
    assert abs(va - vb) <= 0.001 * va, (x["name"], va, vb)
PYEOF
    fi
fi

# --- hardware events: n/a with the reason, the run goes on -------------------------------------
if run "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 3 --min-time 0 --counters sw,basic \
        --format json -o "$T/hw.json"; then
    schema "$T/hw.json"
    $PY - "$T/hw.json" <<'PYEOF' && ok || bad "hardware events n/a"
import json, os, sys
r = json.load(open(sys.argv[1]))
pmu = os.path.exists("/sys/bus/event_source/devices/cpu")
for l in r["layers"]:
    c = l["counters"]
    tc = c["task-clock"]
    assert tc["unit"] == "ns", tc
    assert (tc["value"] or 0) > 0 or "below the counting overhead of" in tc["reason"], tc
    if not pmu:
        assert c["cycles"]["value"] is None, c["cycles"]
        assert "no hardware PMU" in c["cycles"]["reason"], c["cycles"]
        assert l["metrics"]["ipc"]["value"] is None
    assert l["bound"] in ("compute", "memory", "latency"), l["bound"]
    assert "intensity" in l["bound_evidence"], l["bound_evidence"]
assert r["counting"]["threads"] >= 1
PYEOF
    run "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 3 --min-time 0 --counters sw,basic
    grep -q "^counters --counters sw,basic" "$T/out" && ok || bad "table lacks the counters section"
    if [ ! -e /sys/bus/event_source/devices/cpu ]; then
        grep -q "^n/a: cycles, instructions" "$T/out" && ok || bad "table lacks the n/a line"
    fi
    width "$T/out" && ok || bad "a table line is wider than 100 columns"
fi

# --- the counting overhead: measured, subtracted, and below it n/a --------------------------------
# "stage" copies 16 KB (about a microsecond) while the counter reads around
# it cost microseconds: its count is mostly the reads' own. A 4-million-MAC
# fc (about a millisecond on ref, one thread: -t 1) keeps its task-clock.
cat >"$T/ovh.xml" <<'EOF'
<topology name="ovh" precision="f32">
  <input name="x" shape="4,1024" dtype="f32"/>
  <memcpy name="stage"/>
  <fc name="big" units="1024"/>
</topology>
EOF
if run "$NTPROF" run "$T/ovh.xml" -B ref -t 1 -n 20 -w 2 --min-time 0 --counters sw --no-db \
        --format json -o "$T/ovh.json"; then
    schema "$T/ovh.json"
    $PY - "$T/ovh.json" <<'PYEOF' && ok || bad "counting overhead"
import json, re, sys
r = json.load(open(sys.argv[1]))
notes = " ".join(r["counting"]["notes"])
m = re.search(r"counting overhead per row.*?task-clock ([0-9.]+) (ns|\xb5s|ms)", notes)
assert m, notes
ovh_us = float(m.group(1)) * {"ns": 1e-3, "\xb5s": 1, "ms": 1e3}[m.group(2)]
L = {l["name"]: l for l in r["layers"]}
st, big = L["stage"], L["big"]
tc = st["counters"]["task-clock"]
print("overhead %.2f us; stage median %.3f us, task-clock %s; big median %.3f ms, mean %.3f ms, "
      "task-clock %s" % (ovh_us, st["median_ms"] * 1e3, tc["value"] or tc["reason"],
                         big["median_ms"], big["mean_ms"], big["counters"]["task-clock"]["value"]))
# Either n/a for being below the overhead, or close to the copy's own time.
assert (tc["value"] is None and "below the counting overhead of" in tc["reason"]) or \
    tc["value"] / 1e3 <= 3 * st["median_ms"] * 1e3 + 1, (tc, st["median_ms"])
# CPU time summed over the counted threads cannot exceed their number times
# the wall time (a busy machine makes it smaller, so no lower bound from
# the wall time); and the subtraction leaves a count far above the overhead
# intact. The count is per iteration, its sum over them divided by their
# number: held against the mean wall time of the timed pass, a different
# pass (the counting pass follows it), so a slower phase of the machine
# while counting reads above that mean: a run read 0.690 ms of CPU a row
# beside a mean of 0.487 ms. Two threads are counted at -t 1: the second
# is OpenBLAS's server thread (libopenblas-pthread starts it when loaded),
# asleep on a condition variable through a ref run (gdb, 2026-12-06).
btc = big["counters"]["task-clock"]["value"] / 1e6
nthr = r["counting"]["threads"]
assert 20 * ovh_us / 1e3 <= btc <= 1.3 * nthr * big["mean_ms"] + 0.05, \
    (btc, nthr, big["mean_ms"], ovh_us)
PYEOF
fi

# --- PAPI with the events this machine offers --------------------------------------------------------
if [ $NO_PAPI = 1 ]; then
    "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 1 --min-time 0 --tool papi >/dev/null 2>"$T/err"
    [ $? = 1 ] && grep -q "built without PAPI" "$T/err" && ok || bad "papi refusal: $(cat "$T/err")"
elif run "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 3 --min-time 0 \
        --tool papi:perf::TASK-CLOCK,perf::PAGE-FAULTS,PAPI_TOT_INS --format json -o "$T/papi.json"; then
    schema "$T/papi.json"
    # papi_component_avail lists "\-> Disabled: ..." under a component it cannot use.
    PAPI_PERF_OFF=$(papi_component_avail 2>/dev/null | grep -A1 '^Name: *perf_event ' | grep -c 'Disabled') \
    $PY - "$T/papi.json" <<'PYEOF' && ok || bad "papi"
import json, os, sys
r = json.load(open(sys.argv[1]))
off = os.environ.get("PAPI_PERF_OFF", "0") not in ("", "0")
for l in r["layers"]:
    c = l["counters"]
    if off:
        # PAPI's CPU component is disabled (libpfm4 knows no PMU here): every
        # event is n/a with PAPI's reason, none is a silent 0.
        for e in ("perf::TASK-CLOCK", "perf::PAGE-FAULTS", "PAPI_TOT_INS"):
            v = c["papi:" + e]
            assert v["value"] is None and "perf_event component is disabled" in v["reason"], v
        continue
    assert c["papi:perf::TASK-CLOCK"]["value"] > 0, c
    assert c["papi:perf::PAGE-FAULTS"]["value"] is not None, c
    if not os.path.exists("/sys/bus/event_source/devices/cpu"):
        assert c["papi:PAPI_TOT_INS"]["value"] is None and "PAPI" in c["papi:PAPI_TOT_INS"]["reason"]
PYEOF
fi

# --- NVTX: ranges when the build has the headers, a clear refusal otherwise ------------------------
# An NVTX injection library (what Nsight loads through NVTX_INJECTION64_PATH)
# that logs the ranges, so the test sees exactly what Nsight would.
NVTX_INC=""
for d in "${CUDAToolkit_ROOT:-/nonexistent}/include" "${CUDA_HOME:-/nonexistent}/include" \
         "${CUDA_PATH:-/nonexistent}/include" /usr/local/cuda/include; do
    [ -e "$d/nvtx3/nvToolsExt.h" ] && NVTX_INC=$d && break
done
cat >"$T/inject.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <nvtx3/nvToolsExt.h>
static FILE *out;
static nvtxRangeId_t next_id;
static int push(const char *m) { fprintf(out, "push %s\n", m); return 0; }
static int pop(void) { fprintf(out, "pop\n"); return 0; }
static nvtxRangeId_t start(const char *m) { fprintf(out, "start %s\n", m); return ++next_id; }
static void end(nvtxRangeId_t id) { fprintf(out, "end %llu\n", (unsigned long long)id); }
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable t;
    unsigned int n;
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || n <= NVTX_CBID_CORE_RangePop)
        return 0;
    out = fopen(getenv("NVTX_LOG"), "w");
    if (!out)
        return 0;
    setvbuf(out, NULL, _IOLBF, 0);
    *t[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push;
    *t[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
    *t[NVTX_CBID_CORE_RangeStartA] = (NvtxFunctionPointer)start;
    *t[NVTX_CBID_CORE_RangeEnd] = (NvtxFunctionPointer)end;
    return 1;
}
EOF
"$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 2 --min-time 0 --tool nvtx --format json \
    -o "$T/nvtx.json" >"$T/out" 2>"$T/err"
rc=$?
if [ $rc = 0 ]; then
    grep -q '"nvtx: NVTX' "$T/nvtx.json" && ok || bad "nvtx note missing"
    if [ -n "$NVTX_INC" ] && gcc -shared -fPIC -I"$NVTX_INC" "$T/inject.c" -o "$T/inject.so"; then
        ok
        NVTX_INJECTION64_PATH="$T/inject.so" NVTX_LOG="$T/nvtx.log" \
            run "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 2 --min-time 0 --tool nvtx
        # Two counting iterations: each layer pushed twice, the marker started twice.
        [ "$(grep -c '^push fc1$' "$T/nvtx.log")" = 2 ] && ok || bad "nvtx: fc1 ranges: $(head -5 "$T/nvtx.log")"
        [ "$(grep -c '^push ' "$T/nvtx.log")" = 22 ] && ok || bad "nvtx: want 22 layer ranges"
        [ "$(grep -c '^pop$' "$T/nvtx.log")" = 22 ] && ok || bad "nvtx: want 22 pops"
        [ "$(grep -c '^start body$' "$T/nvtx.log")" = 2 ] && ok || bad "nvtx: marker body ranges"
        [ "$(grep -c '^end ' "$T/nvtx.log")" = 2 ] && ok || bad "nvtx: marker range ends"
    else
        bad "cannot build the NVTX injection library for the test"
    fi
else
    grep -q "built without NVTX" "$T/err" && ok || bad "nvtx: exit $rc: $(cat "$T/err")"
fi

# --- ntprof counters and usage errors ------------------------------------------------------------------
if run "$NTPROF" counters; then
    grep -Eq '^  sw +yes' "$T/out" && ok || bad "ntprof counters: sw not available"
    grep -Eq '^  perf-stat +yes' "$T/out" && ok || bad "ntprof counters: perf-stat not available"
    grep -Eq '^  task-clock +yes' "$T/out" && ok || bad "ntprof counters: task-clock"
    width "$T/out" && ok || bad "ntprof counters: a line is wider than 100"
fi
"$NTPROF" run "$SRC/models/tiny-mlp.xml" --tool perf-stats >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q "did you mean 'perf-stat'?" "$T/err" && ok || bad "--tool perf-stats: $(cat "$T/err")"
"$NTPROF" run "$SRC/models/tiny-mlp.xml" --counters sw,cycels >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q "did you mean 'cycles'?" "$T/err" && ok || bad "--counters cycels: $(cat "$T/err")"
"$NTPROF" counters extra >/dev/null 2>&1
[ $? = 2 ] && ok || bad "ntprof counters extra: want exit 2"

finish test_tools
