/* libFuzzer harness for the input-file readers: .npy (src/io/npy.c) and
 * serialized ONNX TensorProto .pb files (src/io/onnx-proto.c), which
 * `ntprof run --input` reads (tests/test_npy_fuzz.sh runs it briefly in CI;
 * seeds in fuzz/corpus/npy/, tokens in fuzz/npy.dict). Each input is read
 * both ways, from memory: ntp__npy_read_memory and ntp__pb_read_memory are
 * the readers that the file paths call after opening the file, so nothing
 * but the parsing runs per input (no file, no mapping). */
#include <stddef.h>
#include <stdint.h>

#include "io/io-impl.h"
#include "io/pb-impl.h"
#include "ntprof/ntprof.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One context for the run, cleared after each input. */
static ntp_ctx *npy_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    npy_ctx = ntp_ctx_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!npy_ctx)
        return 0;
    ntp_npy a;
    if (ntp__npy_read_memory(npy_ctx, "fuzz.npy", data, size, &a) == NTP_STATUS_OK)
        ntp__npy_free(&a);
    if (ntp__pb_read_memory(npy_ctx, "fuzz.pb", data, size, &a) == NTP_STATUS_OK)
        ntp__npy_free(&a);
    ntp_ctx_clear(npy_ctx);
    ntp_ctx_clear_warnings(npy_ctx);
    return 0;
}
