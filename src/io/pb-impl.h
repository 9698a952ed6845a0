/* ONNX TensorProto files as run inputs (src/io/onnx-proto.c), declared apart
 * from the rest of the ONNX reader so that the engine's input loader does
 * not see protobuf-c. */
#ifndef NTPROF_PB_IMPL_H
#define NTPROF_PB_IMPL_H

/* ntp_npy comes from io-impl.h, which the includer must include first (its
 * npy declarations sit outside its include guard, so including it twice
 * would define ntp_npy twice). */

/* Read a serialized ONNX TensorProto (.pb, as ONNX's test data sets store
 * their inputs) into the same result as ntp__npy_read: FLOAT, FLOAT16,
 * INT32, INT64, INT8, UINT8 and BOOL (as u8) data. Free with
 * ntp__npy_free. Errors name the file and what was wrong. */
ntp_status ntp__pb_read(ntp_ctx *ctx, const char *path, ntp_npy *out);
/* The same from len bytes in memory (the fuzzer's way in); name stands for
 * the file in errors. */
ntp_status ntp__pb_read_memory(ntp_ctx *ctx, const char *name, const void *data, size_t len,
                               ntp_npy *out);

#endif
