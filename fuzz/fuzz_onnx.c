/* libFuzzer harness for the ONNX reader (cmake -DNTP_FUZZ=ON with clang;
 * tests/test_onnx_fuzz.sh runs it briefly in CI).
 *
 * Each input is read three ways: as a model (the whole reader: nesting
 * check, unpack, tensor decoding, folding, mapping, shape inference, then
 * the analysis), as a model bound to inputs like the conformance driver
 * does (skipped for bytes that do not unpack: it would fail the same
 * way), and as a TensorProto (the .pb input path). A memory budget keeps
 * the reader from building graphs larger than the fuzzer's RSS limit: a
 * graph over it must be refused, not allocated. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/onnx-impl.h"
#include "ntprof/ntprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ntp_ctx *ctx = ntp_ctx_init();
    if (!ctx)
        return 0;
    ntp_load_opts opts = {.max_memory = (int64_t)64 << 20, .batch = 0};
    ntp_graph *g = NULL;
    bool unpacked = true;
    if (ntp__onnx_load_memory(ctx, data, size, "fuzz.onnx", &opts, NULL, 0, &g) == NTP_STATUS_OK) {
        ntp_analysis *a = NULL;
        if (ntp_graph_analyze(ctx, g, &a) == NTP_STATUS_OK)
            ntp_analysis_free(a);
        ntp_graph_free(g);
    } else {
        /* Bytes that are no model (malformed protobuf, or nesting refused
         * before unpacking) fail the second read at the same place: the
         * bound input is looked at only after the unpack. */
        const char *e = ntp_ctx_errmsg(ctx);
        unpacked = !strstr(e, "(the protobuf encoding is malformed or truncated)") &&
                   !strstr(e, "(refused before unpacking");
    }
    /* The same bytes with a value bound to a graph input named "x", as the
     * conformance driver binds its inputs. */
    float v[4] = {1, 2, 3, 4};
    ntp_onnx_tensor t = {.dtype = NTP_ONNX_FLOAT, .shape = {1, {4}}, .n = 4, .f = v};
    ntp_onnx_bind b = {.name = "x", .value = &t};
    g = NULL;
    if (unpacked &&
        ntp__onnx_load_memory(ctx, data, size, "fuzz.onnx", &opts, &b, 1, &g) == NTP_STATUS_OK)
        ntp_graph_free(g);
    /* As a TensorProto. */
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
    if (tp) {
        ntp_onnx_tensor out;
        if (tp->has_data_type && ntp__onnx_tensor_decode(ctx, "fuzz.pb", NULL, tp, "the tensor",
                                                         true, &out) == NTP_STATUS_OK)
            ntp__onnx_tensor_free_data(&out);
        onnx__tensor_proto__free_unpacked(tp, NULL);
    }
    ntp_ctx_free(ctx);
    return 0;
}
