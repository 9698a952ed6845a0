#!/bin/bash
# The layer rule (docs/architecture.md), shown on the build's own include
# roots and check objects (cmake/NtpLayers.cmake): what a layer may include
# and call compiles and links; an upward or sideways #include fails to
# compile, and an upward call fails to link. Each refusal must be for the
# reason asserted (the missing header or symbol named), so a broken command
# cannot pass for a refusal.
#
# usage: check.sh CC SOURCE_DIR BINARY_DIR LAYER_ROOT
set -u
cc=$1 src=$2 bin=$3 roots=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# compile LAYER EXPECT HEADER...: a file of LAYER including each HEADER;
# EXPECT is "ok" or the header whose absence must stop it.
compile() {
    local layer=$1 expect=$2
    shift 2
    local tag=${layer//\//-}
    : >"$tmp/t.c"
    for h in "$@"; do echo "#include \"$h\"" >>"$tmp/t.c"; done
    echo 'int ntp_layer_probe(void);' >>"$tmp/t.c"
    echo 'int ntp_layer_probe(void) { return 0; }' >>"$tmp/t.c"
    "$cc" -std=c11 -D_GNU_SOURCE -fsyntax-only -I"$roots/$tag" -I"$src/include" -I"$bin/generated" \
        $(pkg-config --cflags libxml-2.0 jansson 2>/dev/null) "$tmp/t.c" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$expect" = ok ]; then
        if [ $rc -ne 0 ]; then
            echo "FAIL: $layer cannot include $*:"; head -5 "$tmp/out"; fail=1
        else
            echo "ok: $layer includes $*"
        fi
    elif [ $rc -eq 0 ]; then
        echo "FAIL: $layer includes $expect, which lies above or beside it"; fail=1
    elif ! grep -q -e "$expect: No such file" -e "'$expect' file not found" "$tmp/out"; then
        # (gcc says "X: No such file or directory", clang "'X' file not found")
        echo "FAIL: $layer including $expect failed for another reason:"; head -5 "$tmp/out"; fail=1
    else
        echo "ok: $layer cannot include $expect"
    fi
}

compile graph ok graph/graph-impl.h core/ctx-impl.h core/rng-impl.h
compile graph exec/exec-impl.h graph/graph-impl.h exec/exec-impl.h
compile graph io/io-impl.h io/io-impl.h
compile core graph/graph-impl.h graph/graph-impl.h
compile io ok io/io-impl.h graph/gen-impl.h
compile io report/report-impl.h report/report-impl.h
compile backend/ref ok backend/backend-impl.h inlay/inlay-impl.h
compile backend/ref backend/onednn/onednn-impl.h backend/onednn/onednn-impl.h
compile backend/ref measure/measure-impl.h measure/measure-impl.h
compile measure ok measure/measure-impl.h core/writers-impl.h backend/backend-impl.h
compile measure report/report-impl.h report/report-impl.h
compile measure exec/exec-impl.h exec/exec-impl.h
compile exec ok exec/exec-impl.h measure/counters-impl.h io/io-impl.h
compile exec machine/machine-cuda-impl.h machine/machine-cuda-impl.h
compile store ok store/store-impl.h report/report-impl.h measure/machine-impl.h

# link LAYER EXPECT SYMBOL: a shared object calling SYMBOL, linked with
# --no-undefined against LAYER's check object (LAYER and the layers below it).
link() {
    local layer=$1 expect=$2 sym=$3
    printf 'void %s(void);\nvoid ntp_layer_probe(void);\nvoid ntp_layer_probe(void) { %s(); }\n' \
        "$sym" "$sym" >"$tmp/l.c"
    "$cc" -shared -fPIC -o "$tmp/l.so" "$tmp/l.c" -Wl,--no-undefined "$roots/check/libntp_layercheck_$layer.so" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$expect" = ok ]; then
        if [ $rc -ne 0 ]; then
            echo "FAIL: $layer cannot call $sym:"; head -5 "$tmp/out"; fail=1
        else
            echo "ok: $layer calls $sym"
        fi
    elif [ $rc -eq 0 ]; then
        echo "FAIL: $layer links a call to $sym, which only a layer above defines"; fail=1
    elif ! grep -q "undefined reference to \`$sym'" "$tmp/out"; then
        echo "FAIL: $layer calling $sym failed for another reason:"; head -5 "$tmp/out"; fail=1
    else
        echo "ok: $layer cannot call $sym"
    fi
}

if [ -e "$roots/check/libntp_layercheck_graph.so" ]; then
    link graph ok ntp_graph_free
    link graph fail ntp_run
    link graph fail ntp_graph_load_xml_memory
    link measure ok ntp_stats_compute
    link measure fail ntp_machine_measure
    link exec ok ntp_run
else
    echo "(the link check is off in this build: NTP_LAYER_LINK_CHECK)"
fi
exit $fail
