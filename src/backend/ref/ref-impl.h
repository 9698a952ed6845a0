/* The reference backend's kernels, private to libntprof.
 *
 * Plain portable C, f32 arithmetic on f32 storage; clarity before speed. The
 * backend (ref-backend.c) emulates bf16, f16 and int8 storage by rounding
 * every output and weight through the storage type (round to nearest even),
 * which gives exactly the values true reduced-precision storage would hold.
 * Each kernel reads k->in/k->w and writes k->out as docs/ops.md specifies. */
#ifndef NTPROF_REF_IMPL_H
#define NTPROF_REF_IMPL_H

#include "backend/backend-impl.h"

/* Scratch bytes a node needs on this backend (0 for most). */
size_t ntp__ref_workspace(const ntp_kargs *k);

/* One kernel per op family; each dispatches on k->node->op where a family
 * holds several ops. */
ntp_status ntp__ref_run(ntp_ctx *ctx, const ntp_kargs *k);

#endif
