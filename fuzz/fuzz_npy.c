/* libFuzzer harness for the input-file readers: .npy (src/io/npy.c) and
 * serialized ONNX TensorProto .pb files (src/io/onnx-proto.c), which
 * `ntprof run --input` reads (tests/test_npy_fuzz.sh runs it briefly in CI;
 * seeds in fuzz/corpus/npy/, tokens in fuzz/npy.dict). Each input is read
 * both ways. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-file.h"
#include "io/io-impl.h"
#include "io/pb-impl.h"
#include "ntprof/ntprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    ntp_ctx *ctx = ntp_ctx_init();
    if (ctx) {
        ntp_npy a;
        if (ntp__npy_read(ctx, path, &a) == NTP_STATUS_OK)
            ntp__npy_free(&a);
        if (ntp__pb_read(ctx, path, &a) == NTP_STATUS_OK)
            ntp__npy_free(&a);
        ntp_ctx_free(ctx);
    }
    close(fd);
    return 0;
}
