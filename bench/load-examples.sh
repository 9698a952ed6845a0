#!/usr/bin/env bash
# The four measured examples of docs/load.md ("Measured examples"): one
# `ntprof load` run per LoadGen scenario on models/serve-delay.xml (a
# 1000 us busy wait, the reference backend), each as JSON without touching
# the history, then one Markdown table row per scenario to paste into the
# page: its metric, the latencies, offered and achieved QPS, samples/s,
# queries, validity and the generator's lateness, with the load average and
# the other processes' share of the CPUs the run measured beside it. About
# ten seconds; run it on a quiet machine (a figure taken under load says
# so in its own row).
# Usage: bench/load-examples.sh <path-to-ntprof>
set -euo pipefail
# shellcheck source=bench/support/ntprof-arg.sh
. "$(dirname "$0")/support/ntprof-arg.sh"
NTPROF=$(ntprof_arg load-examples.sh "load-examples.sh <path-to-ntprof>" "${1-}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
M=$SRC/models/serve-delay.xml
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run() {
    local name=$1
    shift
    "$NTPROF" load "$M" -B ref "$@" --no-db -f json -o "$T/$name.json"
}
run single-stream --scenario single-stream --duration 1 --min-queries 100
run multi-stream --scenario multi-stream -q 4 --max-batch 4 --duration 1 --min-queries 700
run server --scenario server --qps 300 --latency-bound 5 --duration 1 --min-queries 700
run offline --scenario offline -s per_sample_us=100 --max-batch 4 --duration 0.3 --min-queries 100
/usr/bin/python3 - "$T" <<'EOF'
import json, sys, os
d = sys.argv[1]
print("| scenario | metric | p50 ms | p90 ms | p99 ms | mean ms | QPS offered / achieved | samples/s | queries | valid | lateness mean µs | load average, others' CPU share |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
for name in ["single-stream", "multi-stream", "server", "offline"]:
    r = json.load(open(os.path.join(d, name + ".json")))
    L = r["latency_ms"]
    f = lambda v: "n/a" if v is None else "%.3f" % v
    if name == "single-stream":
        metric = "p90 %s ms" % f(L["p90"])
    elif name == "multi-stream":
        metric = "p99 %s ms" % f(L["p99"])
    elif name == "server":
        metric = "p99 %s ms (bound %s)" % (f(L["p99"]), f(r["latency_bound_ms"]))
    else:
        metric = "%.1f samples/s" % r["samples_per_s"]
    g = r.get("generator", {})
    m = r.get("machine", {})
    la = m.get("load_average")
    other = m.get("other")
    ctx = "%s, %s" % ("n/a" if la is None else "%.2f" % la,
                      "n/a" if other is None else "%.0f%%" % (100 * other))
    qps = "%s / %.1f" % ("n/a" if not r["qps_offered"] else "%.1f" % r["qps_offered"], r["qps_achieved"])
    late = g.get("lateness_mean_us")
    print("| %s | %s | %s | %s | %s | %s | %s | %.1f | %d | %s | %s | %s |" % (
        name, metric, f(L["p50"]), f(L["p90"]), f(L["p99"]), f(L["mean"]), qps,
        r["samples_per_s"], r["queries"], "yes" if r["valid"] else "no",
        "n/a" if late is None else "%.1f" % late, ctx))
EOF
