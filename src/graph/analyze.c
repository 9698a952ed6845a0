/* Static analysis: shapes are already inferred; add up the work and bytes. */
#include <stdlib.h>

#include "core/ctx-impl.h"
#include "graph-impl.h"

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return ntp__add_ok(a, b, &r) ? r : INT64_MAX;
}

ntp_status ntp_graph_analyze(ntp_ctx *ctx, const ntp_graph *g, ntp_analysis **out)
{
    *out = NULL;
    ntp_analysis *a = calloc(1, sizeof *a);
    if (!a || !(a->layers = calloc((size_t)g->n_nodes + 1, sizeof *a->layers))) {
        free(a);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory analysing '%s'", g->name);
    }
    /* A weight two layers share (a tied LM head's table) counts once, in
     * the first layer that lists it; each layer's traffic still reads it. */
    bool *seen = calloc((size_t)g->n_tensors + 1, sizeof *seen);
    if (!seen) {
        free(a->layers);
        free(a);
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "out of memory analysing '%s'", g->name);
    }
    a->precision = g->precision;
    a->n_layers = g->n_nodes;
    for (int p = 0; p < g->n_nodes; p++) {
        const ntp_node *n = &g->nodes[g->order[p]];
        ntp_layer_cost *l = &a->layers[p];
        ntp_cost c;
        ntp__op_cost(g, n, &c);
        l->name = n->name;
        l->type = ntp__op_name(n->op);
        l->inlay = ntp__op_kind(n->op) == NTP_OP_KIND_INLAY;
        if (n->n_out > 0)
            l->output_shape = g->tensors[n->out[0]].shape;
        l->macs = c.macs;
        l->flops = c.flops;
        int64_t shared_bytes = 0;
        for (int k = 0; k < n->n_w; k++) {
            const ntp_tensor *t = &g->tensors[n->w[k]];
            l->weight_bytes = sat_add(l->weight_bytes, ntp__tensor_bytes(t));
            if (seen[n->w[k]]) {
                shared_bytes = sat_add(shared_bytes, ntp__tensor_bytes(t));
                continue;
            }
            seen[n->w[k]] = true;
            if (t->kind == NTP_TENSOR_WEIGHT)
                l->params = sat_add(l->params, ntp_shape_numel(&t->shape));
        }
        for (int k = 0; k < n->n_in; k++)
            l->input_bytes = sat_add(l->input_bytes, ntp__tensor_bytes(ntp__cin(g, n, k)));
        for (int k = 0; k < n->n_out; k++)
            l->output_bytes = sat_add(l->output_bytes, ntp__tensor_bytes(ntp__cout(g, n, k)));
        l->traffic_bytes = sat_add(sat_add(l->weight_bytes, l->input_bytes), l->output_bytes);
        l->intensity = l->traffic_bytes > 0 ? (double)l->flops / (double)l->traffic_bytes : 0.0;
        l->n_parts = ntp__cost_parts(g, n, l->parts);

        a->params = sat_add(a->params, l->params);
        a->macs = sat_add(a->macs, l->macs);
        a->flops = sat_add(a->flops, l->flops);
        a->weight_bytes = sat_add(a->weight_bytes, l->weight_bytes - shared_bytes);
        a->activation_bytes = sat_add(a->activation_bytes, l->output_bytes);
        a->traffic_bytes = sat_add(a->traffic_bytes, l->traffic_bytes);
    }
    for (int i = 0; i < g->n_inputs; i++)
        a->input_bytes = sat_add(a->input_bytes, ntp__tensor_bytes(&g->tensors[g->inputs[i]]));
    a->peak_activation_bytes = g->arena_bytes;
    free(seen);
    *out = a;
    return NTP_STATUS_OK;
}

void ntp_analysis_free(ntp_analysis *a)
{
    if (!a)
        return;
    free(a->layers);
    free(a);
}
