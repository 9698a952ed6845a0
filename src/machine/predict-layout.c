/* The rows a run adds besides its layers, before it runs
 * (docs/predict.md#reorders-and-conversions): a backend's reorders
 * (oneDNN's changes between its blocked layouts and plain ones) and the
 * engine's conversions between two backends' storage types.
 *
 * oneDNN picks its layouts when its primitives are created (format_tag_any),
 * from the shapes and this CPU's instruction set: no rule written here could
 * restate that choice without drifting from it. So the prediction prepares
 * the plan exactly as a run does before its first pass (same placement,
 * weights loaded, primitives created, nothing executed) and reads the rows
 * the run would time, with their bytes; each is priced as a copy under its
 * backend's calibration. For another machine's calibration the plan is
 * this machine's, priced with that machine's coefficients: the layouts are
 * the same where the instruction set and the backend's version are, and
 * the prediction says so where they are not (or are not recorded). Where
 * no plan can be prepared (a backend this build lacks or this machine
 * cannot run, an int8 plan, which needs the run's calibration pass first)
 * one row says what is unknown. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend-impl.h"
#include "core/ctx-impl.h"
#include "exec/exec-impl.h"
#include "predict-impl.h"

/* Whether a plan placed as `where` says can add rows besides its layers: a
 * backend with sub-steps (oneDNN's reorders), or layers storing their
 * activations in different types (the engine's conversions), or a backend
 * this build lacks (it cannot be known). */
static bool may_add_rows(const ntp_graph *g, const char *const *where)
{
    ntp_dtype first = NTP_DTYPE_F32;
    for (int i = 0; i < g->n_nodes; i++) {
        const ntp_backend_i *be = ntp__backend_find(where[i]);
        if (!be || be->n_steps)
            return true;
        ntp_dtype t = ntp__be_storage_dtype(be, g->nodes[g->order[i]].precision);
        if (i == 0)
            first = t;
        else if (t != first)
            return true;
    }
    return false;
}

/* One row standing for every reorder and conversion, not predicted. */
static ntp_status unknown_row(ntp_ctx *ctx, ntp_prediction *p, const char *note)
{
    ntp_layer_prediction *l = calloc(1, sizeof *l);
    char *name = strdup("reorders");
    if (!l || !name) {
        free(l);
        free(name);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    l->name = name;
    l->type = "reorder";
    l->kind = "reorder";
    l->family = NTP_PREDICT_FAMILY_COPY;
    l->level = "-";
    l->backend = p->cals[0].backend;
    l->predicted_ms = l->compute_ms = l->memory_ms = l->overhead_ms = NAN;
    l->layer = -1;
    snprintf(l->note, sizeof l->note, "%s", note);
    p->copies = l;
    p->n_copies = 1;
    return NTP_STATUS_OK;
}

/* The reorder and conversion rows of a prepared plan x, in a run's order. */
static ntp_status read_rows(ntp_ctx *ctx, const ntp_exec *x, const ntp_rows *w, ntp_prediction *p)
{
    if (!(p->copies = calloc((size_t)w->n + 1, sizeof *p->copies)))
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int k = 0; k < w->n; k++) {
        const ntp_step *stp = &x->steps[w->step[k]];
        ntp_layer_prediction l = {0};
        char name[512];
        if (stp->kind == NTP_STEP_CONVERT) {
            /* Named and sized as the run's row (exec/run.c's fill_rows). */
            snprintf(name, sizeof name, "%s", stp->name ? stp->name : "convert");
            l.kind = l.type = "convert";
            l.bytes = x->slots[stp->src].bytes + x->slots[stp->dst].bytes;
        } else if (stp->kind == NTP_STEP_NODE && w->sub[k] == stp->main_sub) {
            /* The layer's own row: the kernel the backend chose for it,
             * whose correction the layer takes (correct_for_impls). The
             * name is interned by the engine: it outlives the plan. */
            if (stp->pos >= 0 && stp->pos < p->n_layers) {
                p->layers[stp->pos].impl = ntp__exec_impl(x, w->step[k]);
                /* The layout its primitive reads (a static string): with
                 * the kernel, the key of its correction. */
                p->layers[stp->pos].src_layout = ntp__exec_src_layout(x, w->step[k]);
            }
            continue;
        } else if (stp->kind == NTP_STEP_NODE && w->sub[k] != stp->main_sub) {
            const char *suffix = "", *type = "step";
            int64_t bytes = 0;
            ntp__be_step_info(x->be[stp->be], x->be_state[stp->be], stp->state, w->sub[k], &suffix,
                              &type, &bytes);
            if (!type || strcmp(type, "reorder") != 0)
                continue;
            snprintf(name, sizeof name, "%s%s", p->layers[stp->pos].name, suffix ? suffix : "");
            l.kind = l.type = "reorder";
            l.bytes = bytes;
        } else {
            continue;
        }
        l.backend = x->be[stp->be]->name;
        l.layer = stp->pos;
        l.before = stp->kind == NTP_STEP_CONVERT || w->sub[k] < stp->main_sub;
        if (!(l.name = strdup(name)))
            return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
        ntp__predict_copy_row(ntp__predict_copy_cal(p, l.backend), p->reuse, &l);
        if (isfinite(l.predicted_ms))
            p->copies_ms += l.predicted_ms;
        p->copies[p->n_copies++] = l;
    }
    return NTP_STATUS_OK;
}

/* For a calibration of another machine: where this machine's plan stands
 * for that machine's, and why its rows may differ there (the backend picks
 * its layouts from the shapes, its version and the instruction set). */
static void other_machine_note(const ntp_calibration *cal, char *buf, size_t len)
{
    ntp_env env;
    ntp_env_collect(&env);
    char ver[192], why[192];
    ntp_predict_backend_version(cal->backend, ver, sizeof ver);
    why[0] = '\0';
    if (!cal->cpu_flags[0])
        snprintf(why, sizeof why, "its ISA was not recorded (a calibration from before it was)");
    else if (strcmp(cal->cpu_flags, env.cpu_flags) != 0)
        snprintf(why, sizeof why, "its ISA (%.60s) is not this one's (%.60s)", cal->cpu_flags,
                 env.cpu_flags);
    else if (strcmp(cal->backend_version, ver) != 0)
        snprintf(why, sizeof why, "it ran %.16s %.40s, this one %.40s", cal->backend,
                 cal->backend_version, ver);
    if (why[0])
        snprintf(buf, len,
                 "reorder rows of this machine's plan, priced with that machine's calibration; "
                 "%.16s's layouts there may differ: %s",
                 cal->backend, why);
    else
        snprintf(buf, len,
                 "reorder rows of this machine's plan, priced with that machine's calibration "
                 "(same ISA and %.16s version: the same layouts)",
                 cal->backend);
}

ntp_status ntp__predict_copies(ntp_ctx *ctx, const ntp_graph *g, const ntp_predict_opts *o,
                               const char *const *where, ntp_prediction *p)
{
    const ntp_calibration *cal = &p->cals[0];
    char note[64];
    if (p->roofline_only)
        return unknown_row(ctx, p, "n/a: no copies in a roofline-only estimate");
    /* The plan is also prepared where no row can arise but the
     * calibrations correct their families per implementation: the plan
     * names each layer's kernel. Where it cannot be prepared, only rows
     * that may exist are unknown. */
    bool rows = may_add_rows(g, where), impls = false;
    for (int k = 0; k < p->n_cals; k++)
        impls |= p->cals[k].n_impls > 0;
    if (!rows && !impls)
        return NTP_STATUS_OK; /* none can be added: nothing unknown */
    char here[256];
    ntp_machine_key(here, sizeof here);
    const ntp_backend_i *be = ntp__backend_find(cal->backend);
    if (!be || !ntp__be_available(be, NULL, 0)) {
        snprintf(note, sizeof note, "n/a: layouts of %.16s, which cannot run here", cal->backend);
        return rows ? unknown_row(ctx, p, note) : NTP_STATUS_OK;
    }
    if (!o->reorders)
        return rows ? unknown_row(ctx, p, "n/a: known once the plan is prepared") : NTP_STATUS_OK;
    if (g->precision == NTP_DTYPE_I8)
        return rows ? unknown_row(ctx, p, "n/a: an i8 plan needs a run's calibration pass")
                    : NTP_STATUS_OK;
    ntp_exec_opts eo = {.backend = be,
                        .threads = o->threads > 0 ? o->threads : cal->threads,
                        .seed = 1,
                        .first = 0,
                        .last = g->n_nodes - 1,
                        .place = o->place,
                        .n_place = o->n_place,
                        .fuse = o->fuse};
    ntp_exec x = {0};
    ntp_rows w = {0};
    ntp_status st = ntp__exec_init(ctx, &x, g, &eo);
    if (st) {
        /* Not the prediction's failure: the layers stand, the rows are
         * unknown, and the warning says why. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ntp_ctx_errmsg(ctx));
        ntp_ctx_clear(ctx);
        ntp__warn(ctx,
                  "predict: the plan could not be prepared, so its reorders and kernels are "
                  "unknown: %s",
                  msg);
        return rows ? unknown_row(ctx, p, "n/a: the plan could not be prepared") : NTP_STATUS_OK;
    }
    if (!ntp__rows_build(&x, &w))
        st = ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory");
    else
        st = read_rows(ctx, &x, &w, p);
    ntp__rows_free(&w);
    ntp__exec_free(&x);
    if (!st)
        p->total_ms += p->copies_ms;
    if (!st && strcmp(here, cal->machine_key) != 0 && p->n_copies > 0) {
        other_machine_note(cal, p->copies_note, sizeof p->copies_note);
        if (strstr(p->copies_note, "may differ"))
            ntp__warn(ctx, "predict: %s", p->copies_note);
    }
    return st;
}
