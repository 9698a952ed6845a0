#!/usr/bin/env bash
# The GPU side of the CLI (docs/gpu.md) as a user meets it: without a GPU
# (or without the toolkit) `--backend cuda`, --place LAYER=cuda and `train
# --backend cuda` fail with one line and exit 1, writing nothing; --place
# is checked; --tool ncu and --tool nsys are refused with one line when
# Nsight is not installed, and with stand-ins for ncu and nsys (NTP_NCU,
# NTP_NSYS) the run is re-executed under them with an NVTX range per row,
# ncu's CSV is folded into the marker's counters and nsys's timeline is
# named in the notes. With a GPU, a run on cuda has its copy rows and
# device memory.
# Usage: test_cuda_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(-n 1 -w 0 --min-time 0 --no-db)
# Every built backend: --version names those usable here on its first line,
# and a built one that is not (cuda without a device) on a line of its own,
# "cuda: built, but not usable on this machine: <reason>".
BACKENDS=$("$NTPROF" --version | sed -n '1s/.*backends: \([a-z0-9,]*\)).*/\1/p')
BUILT=no
case ",$BACKENDS," in *,cuda,*) BUILT=yes ;; esac
"$NTPROF" --version | grep -q '^cuda: built, but not usable on this machine: ' && BUILT=yes
# Is there a device? A run on cuda tells.
DEVICE=no
"$NTPROF" run "$MLP" --backend cuda "${FAST[@]}" >"$T/probe.out" 2>"$T/probe.err" && DEVICE=yes
echo "cuda built: $BUILT, device: $DEVICE"

if [ "$DEVICE" = no ]; then
    expect_exit 1 "$NTPROF" run "$MLP" --backend cuda "${FAST[@]}" -o "$T/never.txt"
    if [ "$BUILT" = yes ]; then
        expect_err "ntprof: backend 'cuda': no CUDA device (cudaGetDeviceCount: "
    else
        expect_err "unknown backend 'cuda'"
    fi
    [ ! -e "$T/never.txt" ] && ok || bad "a refused run wrote its report"
    expect_exit 1 "$NTPROF" run "$MLP" --place fc1=cuda "${FAST[@]}"
    if [ "$BUILT" = yes ]; then
        expect_err "<fc name='fc1'>: backend 'cuda': no CUDA device ("
    else
        expect_err "--place fc1=cuda: unknown backend 'cuda'"
    fi
    # Training on cuda (its backward through cuDNN and cuBLAS) is refused
    # the same way, before any step.
    expect_exit 1 "$NTPROF" train "$MLP" --backend cuda --steps 1
    if [ "$BUILT" = yes ]; then
        expect_err "ntprof: backend 'cuda': no CUDA device (cudaGetDeviceCount: "
    else
        expect_err "backend 'cuda' is not built here"
    fi
fi

# --place is checked before anything runs.
expect_exit 2 "$NTPROF" run "$MLP" --place fc1 "${FAST[@]}"
expect_err "--place expects LAYER=BACKEND, got 'fc1'"
expect_exit 1 "$NTPROF" run "$MLP" --place fc9=ref "${FAST[@]}"
expect_err "has no layer 'fc9'; did you mean 'fc1'?"
# A CPU placement through --place shows in the report.
expect_exit 0 "$NTPROF" run "$MLP" --backend ref --place fc2=ref "${FAST[@]}" -f json -o "$T/p.json"
$PY - "$T/p.json" <<'PYEOF' && ok || bad "--place fc2=ref report"
import json, sys
d = json.load(open(sys.argv[1]))
assert [l["backend"] for l in d["layers"] if l["name"] == "fc2"] == ["ref"]
PYEOF

# Nsight refused when it is not installed (unless this machine has it).
if [ -z "${NTP_NCU:-}" ] && ! command -v ncu >/dev/null && [ ! -x /usr/local/cuda/bin/ncu ]; then
    expect_exit 1 "$NTPROF" run "$MLP" --tool ncu:body "${FAST[@]}"
    expect_err "--tool ncu:body: Nsight Compute (ncu) is not installed"
fi
if [ -z "${NTP_NSYS:-}" ] && ! command -v nsys >/dev/null && [ ! -x /usr/local/cuda/bin/nsys ]; then
    expect_exit 1 "$NTPROF" run "$MLP" --tool nsys "${FAST[@]}"
    expect_err "--tool nsys: Nsight Systems (nsys) is not installed"
fi

# Stand-ins for ncu and nsys: they record their arguments, run the child
# command line (from the first executable argument on), and write what the
# real tool would: ncu's raw CSV, nsys's report file.
cat >"$T/fake-ncu" <<'EOF'
#!/usr/bin/env bash
log=""
prev=""
child=()
for a in "$@"; do
    if [ ${#child[@]} -gt 0 ] || { [ -x "$a" ] && [ -f "$a" ] && [ "$prev" != "--log-file" ]; }; then
        child+=("$a")
    fi
    [ "$prev" = "--log-file" ] && [ ${#child[@]} = 0 ] && log=$a
    prev=$a
done
printf '%s\n' "$@" >"$(dirname "$log")/ncu.args"
"${child[@]}" >/dev/null 2>&1 || exit 3
cat >"$log" <<'CSV'
==PROF== Connected to process 1234
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","%","ns","%","%"
"0","1234","ntprof","h","gemm_kernel","1","13","(256, 1, 1)","(8, 1, 1)","0","9.0","10.00","1,000","50.00","20.00"
"1","1234","ntprof","h","epilogue_k<float>","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","70.00","3,000","10.00","60.00"
==PROF== Disconnected from process 1234
CSV
EOF
cat >"$T/fake-nsys" <<'EOF'
#!/usr/bin/env bash
out=""
prev=""
child=()
for a in "$@"; do
    if [ ${#child[@]} -gt 0 ] || { [ -x "$a" ] && [ -f "$a" ] && [ "$prev" != "-o" ]; }; then
        child+=("$a")
    fi
    [ "$prev" = "-o" ] && [ ${#child[@]} = 0 ] && out=$a
    prev=$a
done
printf '%s\n' "$@" >"$(dirname "$out")/nsys.args"
"${child[@]}" >/dev/null 2>&1 || exit 3
: >"$out.nsys-rep"
EOF
chmod +x "$T/fake-ncu" "$T/fake-nsys"

if "$NTPROF" run "$MLP" --tool nvtx "${FAST[@]}" >/dev/null 2>&1; then
    NTP_NCU=$T/fake-ncu expect_exit 0 "$NTPROF" run "$MLP" --tool ncu:body --tool-dir "$T/ncu" \
        "${FAST[@]}" -f json -o "$T/ncu.json"
    # Duration-weighted: SM (50·1000 + 10·3000) / 4000 = 20, DRAM 55, occupancy 50.
    $PY - "$T/ncu.json" <<'PYEOF' && ok || bad "ncu metrics folded into the marker"
import json, sys
d = json.load(open(sys.argv[1]))
m = [m for m in d["markers"] if m["name"] == "body"][0]
c = m["counters"]
assert abs(c["ncu:sm_throughput"]["value"] - 20.0) < 1e-9, c
assert abs(c["ncu:dram_throughput"]["value"] - 55.0) < 1e-9, c
assert abs(c["ncu:achieved_occupancy"]["value"] - 50.0) < 1e-9, c
assert c["ncu:duration"]["value"] == 4000 and c["ncu:duration"]["unit"] == "ns"
assert c["ncu:kernels"]["value"] == 2 and c["ncu:sm_throughput"]["source"] == "ncu"
assert any("ncu: 2 kernels of marker 'body'" in n for n in d["counting"]["notes"])
PYEOF
    # The child ran the same topology with an NVTX range per row, once.
    grep -qx -- "--nvtx" "$T/ncu/ncu.args" && grep -qx "fc1/" "$T/ncu/ncu.args" &&
        grep -qx "nvtx" "$T/ncu/ncu.args" && grep -qx "$MLP" "$T/ncu/ncu.args" && ok ||
        bad "ncu's command line: $(tr '\n' ' ' <"$T/ncu/ncu.args")"
    ! grep -qx "$T/ncu.json" "$T/ncu/ncu.args" && ok || bad "the child writes where the run writes"
    NTP_NCU=$T/fake-ncu expect_exit 1 "$NTPROF" run "$MLP" --tool ncu "${FAST[@]}"
    expect_err "ncu profiles one marker: give --tool ncu:MARKER or --only MARKER"
    NTP_NCU=$T/fake-ncu expect_exit 1 "$NTPROF" run "$MLP" --tool ncu:nobody "${FAST[@]}"
    expect_err "--tool ncu:nobody: the run has no marker 'nobody'"
    NTP_NSYS=$T/fake-nsys expect_exit 0 "$NTPROF" run "$MLP" --tool nsys --tool-dir "$T/nsys" \
        "${FAST[@]}" -f json -o "$T/nsys.json"
    [ -e "$T/nsys/ntprof.nsys-rep" ] && ok || bad "no nsys report file"
    grep -qx -- "--trace=cuda,nvtx" "$T/nsys/nsys.args" && ok || bad "nsys's command line"
    grep -q "nsys-rep" "$T/nsys.json" && ok || bad "the nsys note is missing"
else
    echo "SKIPPED: ncu and nsys stand-ins (this build has no NVTX: --tool nvtx fails)"
fi

if [ "$DEVICE" = yes ]; then
    expect_exit 0 "$NTPROF" run "$MLP" --backend cuda -n 3 --min-time 0 --no-db -f json -o "$T/g.json"
    $PY - "$T/g.json" <<'PYEOF' && ok || bad "a run on cuda"
import json, sys
d = json.load(open(sys.argv[1]))
names = [l["name"] for l in d["layers"]]
assert any(n.endswith(":h2d") for n in names) and any(n.endswith(":d2h") for n in names), names
assert all(l["backend"] in ("cuda", "ref") for l in d["layers"])
PYEOF
    expect_exit 0 "$NTPROF" run "$MLP" --backend cuda --cuda-graph --precision tf32 -n 3 --min-time 0 --no-db
    expect_exit 0 "$NTPROF" run "$SRC/models/tiny-rnn.xml" --place gru=cuda -n 3 --min-time 0 --no-db \
        -f json -o "$T/h.json"
    $PY - "$T/h.json" <<'PYEOF' && ok || bad "gru on cuda, the rest on the default backend"
import json, sys
d = json.load(open(sys.argv[1]))
b = {l["name"]: l["backend"] for l in d["layers"]}
assert b["gru"] == "cuda" and b["gru:h2d"] == "cuda" and b["gru:d2h"] == "cuda" and b["rnn"] != "cuda", b
PYEOF
fi

finish
