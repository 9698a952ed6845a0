/* The per-phase part of the generate report, shared by `ntprof generate`
 * and `ntprof analyze` of a decoder topology (one implementation). */
#ifndef NTPROF_GENERATE_IMPL_H
#define NTPROF_GENERATE_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "core/writers-impl.h"
#include "ntprof/generate.h"

/* The header lines (model, KV cache, memory) and one line pair per phase. */
void ntp__generate_phases_table(FILE *f, const ntp_generate_result *r);
/* {"prompt_len", "gen_len", "context_depth", "batch", "kv_dtype",
 * "kv_bytes_per_token", "kv_bytes_total", "weight_bytes", "prefill": {...},
 * "decode": {...}, "roofline_note"}; *ok false when a value could not be
 * made. */
json_t *ntp__generate_phases_json(bool *ok, const ntp_generate_result *r);

#endif
