/* The ctc_decode inlay: greedy (best path) and prefix beam search decoding of
 * CTC logits, without a language model (docs/inlays.md).
 *
 * The beam search is Hannun et al.'s CTC prefix beam search ("First-Pass
 * Large Vocabulary Continuous Speech Recognition using Bi-Directional
 * Recurrent DNNs", 2014, algorithm 1) in log space. Every prefix keeps two
 * probabilities: of the paths that end in a blank (pb) and of those that end
 * in its last label (pnb); the difference matters because a repeated label
 * only extends the prefix when a blank separates the two.
 *
 * Prefixes live in a trie of (parent, label) nodes, so a prefix is one int.
 * The trie keeps exactly one node per prefix, also for prefixes that were
 * pruned and come back later: a beam entry finds the entry it extends
 * through its parent node, so a second node for the same prefix would split
 * its probability over two beam entries. Each step adds at most beam_width
 * nodes, which bounds the scratch at (1 + T·beam_width) nodes known before
 * the run. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inlay/inlay-impl.h"

#define CTC_ALIGN 64
#define CTC_MAX_BEAM (1 << 20)

typedef struct trie_node {
    int32_t parent;                    /* -1 for the empty prefix */
    int32_t label;                     /* last label, -1 for the empty prefix */
    int32_t slot;                      /* index in the current beam, -1 when not in it */
    int32_t first_child, next_sibling; /* -1 terminated */
} trie_node;

/* A candidate for the next beam: prefix `slot` of the current beam, either
 * unchanged (label -1) or extended by `label`. */
typedef struct cand {
    double score; /* log probability of the candidate prefix */
    int64_t seq;  /* generation order, for deterministic ties */
    int32_t slot, label;
} cand;

typedef struct beam_ws {
    double *lp;       /* classes: this frame's log probabilities */
    int32_t *node[2]; /* beam_width each: current and next beam */
    double *pb[2], *pnb[2];
    double *tot, *b_next, *nb_next; /* beam_width each */
    int32_t *head, *next_in;        /* beam_width each: children in the beam */
    int32_t *mark;                  /* classes */
    cand *heap;                     /* beam_width */
    trie_node *trie;                /* 1 + T·beam_width */
} beam_ws;

static size_t round_up(size_t n)
{
    return (n + CTC_ALIGN - 1) / CTC_ALIGN * CTC_ALIGN;
}

/* Bytes of the scratch (SIZE_MAX when it cannot be represented), carving
 * the arrays out of base when base is not NULL. */
static size_t beam_layout(int64_t T, int64_t C, int64_t W, char *base, beam_ws *w)
{
    if (T < 0 || C < 1 || W < 1 || W > CTC_MAX_BEAM)
        return SIZE_MAX;
    int64_t nodes;
    if (!ntp__mul_ok(T, W, &nodes) || !ntp__add_ok(nodes, 1, &nodes) || nodes > INT32_MAX ||
        C > INT32_MAX / 2)
        return SIZE_MAX;
    const size_t uw = (size_t)W, uc = (size_t)C;
    if ((uint64_t)nodes > SIZE_MAX / 2 / sizeof(trie_node))
        return SIZE_MAX;
    size_t sizes[] = {
        uc * sizeof(double),  uw * sizeof(int32_t), uw * sizeof(int32_t),
        uw * sizeof(double),  uw * sizeof(double),  uw * sizeof(double),
        uw * sizeof(double),  uw * sizeof(double),  uw * sizeof(double),
        uw * sizeof(double),  uw * sizeof(int32_t), uw * sizeof(int32_t),
        uc * sizeof(int32_t), uw * sizeof(cand),    (size_t)nodes * sizeof(trie_node),
    };
    enum { N_ARRAYS = sizeof sizes / sizeof sizes[0] };
    void *p[N_ARRAYS];
    size_t off = 0;
    for (int i = 0; i < N_ARRAYS; i++) {
        p[i] = base ? base + off : NULL;
        off += round_up(sizes[i]);
    }
    if (base) {
        w->lp = p[0];
        w->node[0] = p[1];
        w->node[1] = p[2];
        w->pb[0] = p[3];
        w->pnb[0] = p[4];
        w->pb[1] = p[5];
        w->pnb[1] = p[6];
        w->tot = p[7];
        w->b_next = p[8];
        w->nb_next = p[9];
        w->head = p[10];
        w->next_in = p[11];
        w->mark = p[12];
        w->heap = p[13];
        w->trie = p[14];
    }
    return off;
}

size_t ntp__ctc_beam_ws_bytes(int64_t T, int64_t classes, int64_t beam_width)
{
    size_t n = beam_layout(T, classes, beam_width, NULL, NULL);
    return n == SIZE_MAX ? SIZE_MAX : n + CTC_ALIGN;
}

/* log(e^a + e^b) without overflow; -inf is the log of zero. */
static double log_add(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    double m = a > b ? a : b;
    return m + log1p(exp(-fabs(a - b)));
}

/* Log-softmax of one frame's logits, in double: the decoders compare and
 * sum these over many frames. */
static void log_softmax(const float *x, int64_t C, double *lp)
{
    double m = x[0];
    for (int64_t c = 1; c < C; c++)
        if (x[c] > m)
            m = x[c];
    double sum = 0.0;
    for (int64_t c = 0; c < C; c++)
        sum += exp((double)x[c] - m);
    double lz = m + log(sum);
    for (int64_t c = 0; c < C; c++)
        lp[c] = (double)x[c] - lz;
}

/* Is candidate a worse than b? Lower score, or equal score generated later. */
static int worse(const cand *a, const cand *b)
{
    return a->score < b->score || (a->score == b->score && a->seq > b->seq);
}

/* Keep the best `cap` candidates in a min-heap whose root is the worst. */
static void heap_offer(cand *h, int64_t *size, int64_t cap, cand c)
{
    /* Zero-probability and NaN candidates never enter the beam. */
    if (!(c.score > -INFINITY))
        return;
    int64_t i;
    if (*size < cap) {
        i = (*size)++;
        while (i > 0) {
            int64_t up = (i - 1) / 2;
            if (!worse(&c, &h[up]))
                break;
            h[i] = h[up];
            i = up;
        }
        h[i] = c;
        return;
    }
    if (!worse(&h[0], &c))
        return;
    i = 0;
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *mc = &c;
        if (l < *size && worse(&h[l], mc)) {
            m = l;
            mc = &h[l];
        }
        if (r < *size && worse(&h[r], mc))
            m = r;
        if (m == i)
            break;
        h[i] = h[m];
        i = m;
    }
    h[i] = c;
}

static int cand_order(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (worse(a, b))
        return 1;
    if (worse(b, a))
        return -1;
    return 0;
}

/* Best first. Beams are usually a few dozen entries, where insertion sort
 * beats qsort's call per comparison. */
static void sort_cands(cand *c, int64_t n)
{
    if (n > 32) {
        qsort(c, (size_t)n, sizeof(cand), cand_order);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        cand x = c[i];
        int64_t j = i;
        for (; j > 0 && worse(&c[j - 1], &x); j--)
            c[j] = c[j - 1];
        c[j] = x;
    }
}

/* Write the labels of trie node `node` to out[0..T), padded with -1;
 * returns the length. */
static int64_t emit_prefix(const trie_node *trie, int32_t node, int64_t T, int32_t *out)
{
    int64_t len = 0;
    for (int32_t v = node; v > 0; v = trie[v].parent)
        len++;
    for (int64_t i = len; i < T; i++)
        out[i] = -1;
    int64_t i = len;
    for (int32_t v = node; v > 0; v = trie[v].parent)
        out[--i] = trie[v].label;
    return len;
}

void ntp__ctc_beam_decode(const float *logits, int64_t T, int64_t stride, int64_t C, int64_t W,
                          void *ws, int32_t *out, ntp_ctc_beam_stats *stats)
{
    char *base = (char *)ws + (CTC_ALIGN - (uintptr_t)ws % CTC_ALIGN) % CTC_ALIGN;
    beam_ws w = {0};
    /* The caller sized ws with ntp__ctc_beam_ws_bytes, which refuses what
     * beam_layout refuses; should that contract ever break, an empty
     * decoding rather than writes through pointers never set. */
    if (beam_layout(T, C, W, base, &w) == SIZE_MAX) {
        for (int64_t t = 0; t < T; t++)
            out[t] = -1;
        if (stats)
            *stats = (ntp_ctc_beam_stats){0, 0, -INFINITY, -INFINITY};
        return;
    }
    const int32_t blank = (int32_t)(C - 1);

    int cur = 0;
    int64_t n_beam = 1, n_nodes = 1;
    w.trie[0] = (trie_node){-1, -1, -1, -1, -1};
    w.node[cur][0] = 0;
    w.pb[cur][0] = 0.0; /* the empty prefix: probability one, "ends in blank" */
    w.pnb[cur][0] = -INFINITY;
    for (int64_t c = 0; c < C; c++)
        w.mark[c] = -1;
    int32_t stamp = 0;
    int64_t seq = 0;

    for (int64_t t = 0; t < T; t++) {
        const double *lp = w.lp;
        log_softmax(logits + t * stride, C, w.lp);
        int32_t *node = w.node[cur];
        double *pb = w.pb[cur], *pnb = w.pnb[cur];

        /* Which beam entries extend which: entry j whose parent prefix is
         * entry i is where "i extended by label(j)" lands. */
        for (int64_t i = 0; i < n_beam; i++) {
            w.trie[node[i]].slot = (int32_t)i;
            w.head[i] = -1;
        }
        for (int64_t j = 0; j < n_beam; j++) {
            int32_t p = w.trie[node[j]].parent;
            if (p >= 0 && w.trie[p].slot >= 0) {
                int32_t i = w.trie[p].slot;
                w.next_in[j] = w.head[i];
                w.head[i] = (int32_t)j;
            }
        }
        /* Prefix unchanged: a blank after anything, or its last label
         * repeated after a path that already ends in that label. */
        for (int64_t i = 0; i < n_beam; i++) {
            int32_t last = w.trie[node[i]].label;
            w.tot[i] = log_add(pb[i], pnb[i]);
            w.b_next[i] = w.tot[i] + lp[blank];
            w.nb_next[i] = last >= 0 ? pnb[i] + lp[last] : -INFINITY;
        }
        /* Extensions that are already in the beam add to that entry. A
         * repeated label extends only paths ending in a blank. */
        for (int64_t i = 0; i < n_beam; i++) {
            int32_t last = w.trie[node[i]].label;
            for (int32_t j = w.head[i]; j >= 0; j = w.next_in[j]) {
                int32_t c = w.trie[node[j]].label;
                double from = c == last ? pb[i] : w.tot[i];
                w.nb_next[j] = log_add(w.nb_next[j], from + lp[c]);
            }
        }
        /* Choose the next beam among the updated entries and the new
         * extensions, whose probability has exactly one term. */
        int64_t n_heap = 0;
        for (int64_t i = 0; i < n_beam; i++)
            heap_offer(w.heap, &n_heap, W,
                       (cand){log_add(w.b_next[i], w.nb_next[i]), seq++, (int32_t)i, -1});
        /* Once the heap is full, a candidate must beat its worst entry
         * (a tie loses: it was generated later). Testing that here first
         * rejects most of the beam_width × classes candidates with one
         * comparison. */
        double thr = n_heap == W ? w.heap[0].score : -INFINITY;
        for (int64_t i = 0; i < n_beam; i++) {
            int32_t last = w.trie[node[i]].label;
            stamp++;
            for (int32_t j = w.head[i]; j >= 0; j = w.next_in[j])
                w.mark[w.trie[node[j]].label] = stamp;
            const double tot = w.tot[i];
            for (int32_t c = 0; c < blank; c++) {
                double score = (c == last ? pb[i] : tot) + lp[c];
                if (!(score > thr) || w.mark[c] == stamp)
                    continue;
                heap_offer(w.heap, &n_heap, W, (cand){score, seq + c, (int32_t)i, c});
                if (n_heap == W)
                    thr = w.heap[0].score;
            }
            /* Sequence numbers only order candidates; the ones rejected
             * above never needed one. */
            seq += blank;
        }
        for (int64_t i = 0; i < n_beam; i++)
            w.trie[node[i]].slot = -1;

        /* Sorted best first, so the beam's order is deterministic and the
         * final answer is entry 0. */
        sort_cands(w.heap, n_heap);
        int nxt = 1 - cur;
        for (int64_t e = 0; e < n_heap; e++) {
            const cand *cd = &w.heap[e];
            if (cd->label < 0) {
                w.node[nxt][e] = node[cd->slot];
                w.pb[nxt][e] = w.b_next[cd->slot];
                w.pnb[nxt][e] = w.nb_next[cd->slot];
            } else {
                int32_t u = node[cd->slot], v = w.trie[u].first_child;
                while (v >= 0 && w.trie[v].label != cd->label)
                    v = w.trie[v].next_sibling;
                if (v < 0) {
                    /* At most W new nodes per step: the scratch was sized
                     * for 1 + T·W. */
                    v = (int32_t)n_nodes++;
                    w.trie[v] = (trie_node){u, cd->label, -1, -1, w.trie[u].first_child};
                    w.trie[u].first_child = v;
                }
                w.node[nxt][e] = v;
                w.pb[nxt][e] = -INFINITY;
                w.pnb[nxt][e] = cd->score;
            }
        }
        n_beam = n_heap;
        cur = nxt;
    }

    if (n_beam == 0) {
        /* Only when every candidate was NaN: nothing sensible to decode. */
        for (int64_t i = 0; i < T; i++)
            out[i] = -1;
        if (stats)
            *stats = (ntp_ctc_beam_stats){0, 0, -INFINITY, -INFINITY};
        return;
    }
    int64_t len = emit_prefix(w.trie, w.node[cur][0], T, out);
    if (stats) {
        stats->survivors = (int)n_beam;
        stats->best_len = (int)len;
        stats->best_logp = (float)log_add(w.pb[cur][0], w.pnb[cur][0]);
        stats->second_logp = n_beam > 1 ? (float)log_add(w.pb[cur][1], w.pnb[cur][1]) : -INFINITY;
    }
}

void ntp__ctc_greedy_decode(const float *logits, int64_t T, int64_t stride, int64_t C, int32_t *out)
{
    /* Softmax is monotonic, so the best path is the per-frame argmax of the
     * logits themselves; ties go to the lower class. */
    const int32_t blank = (int32_t)(C - 1);
    int32_t prev = blank;
    int64_t len = 0;
    for (int64_t t = 0; t < T; t++) {
        const float *x = logits + t * stride;
        int32_t best = 0;
        for (int32_t c = 1; c < (int32_t)C; c++)
            if (x[c] > x[best])
                best = c;
        if (best != blank && best != prev)
            out[len++] = best;
        prev = best;
    }
    for (int64_t i = len; i < T; i++)
        out[i] = -1;
}

/* --- the inlay ------------------------------------------------------------------ */

typedef struct ctc_dims {
    int64_t T, N, C, W;
    int mode;
} ctc_dims;

/* need_data: the buffers must be bound (running); sizes alone are enough
 * for a workspace query at prepare time, before the arena exists. */
static ntp_status check_dims(ntp_ctx *ctx, const ntp_kargs *k, ctc_dims *d, bool need_data)
{
    if (!k->node)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INTERNAL, "ctc_decode run without a node");
    const ntp_attrs *a = &k->node->a;
    if (k->n_in < 1 || k->n_out < 1)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INTERNAL,
                                "ctc_decode needs one input and one output");
    const ntp_buf *in = &k->in[0], *out = &k->out[0];
    if (in->dtype != NTP_DTYPE_F32 || out->dtype != NTP_DTYPE_I32)
        return ntp__inlay_error(
            ctx, k, NTP_STATUS_UNSUPPORTED,
            "ctc_decode reads f32 logits and writes i32 labels, got %s in, %s out",
            ntp_dtype_name(in->dtype), ntp_dtype_name(out->dtype));
    if (in->shape.ndim != 3)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "ctc_decode input must be [T, N, classes], got %d dims",
                                in->shape.ndim);
    d->T = in->shape.dim[0];
    d->N = in->shape.dim[1];
    d->C = in->shape.dim[2];
    if (d->T < 0 || d->N < 0 || d->C < 1 || d->C > INT32_MAX / 2)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "ctc_decode input [%lld, %lld, %lld] is not a valid logits shape",
                                (long long)d->T, (long long)d->N, (long long)d->C);
    if (a->alphabet && (int64_t)strlen(a->alphabet) + 1 != d->C)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "ctc_decode alphabet of %zu labels needs %zu classes (blank last), "
                                "logits have %lld",
                                strlen(a->alphabet), strlen(a->alphabet) + 1, (long long)d->C);
    if (out->shape.ndim != 2 || out->shape.dim[0] != d->N || out->shape.dim[1] != d->T)
        return ntp__inlay_error(ctx, k, NTP_STATUS_SHAPE_ERROR,
                                "ctc_decode output must be [%lld, %lld]", (long long)d->N,
                                (long long)d->T);
    d->mode = a->decode;
    d->W = a->beam_width;
    if (d->mode != NTP_CTC_GREEDY && d->mode != NTP_CTC_BEAM)
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT, "ctc_decode mode %d unknown",
                                d->mode);
    if (d->mode == NTP_CTC_BEAM && (d->W < 1 || d->W > CTC_MAX_BEAM))
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                "ctc_decode beam_width %lld must be in [1, %d]", (long long)d->W,
                                CTC_MAX_BEAM);
    if (need_data && d->T > 0 && d->N > 0 && (!in->data || !out->data))
        return ntp__inlay_error(ctx, k, NTP_STATUS_INVALID_ARGUMENT,
                                "ctc_decode buffers without data");
    return NTP_STATUS_OK;
}

size_t ntp__ctc_workspace(const ntp_kargs *k)
{
    ctc_dims d = {0};
    if (!k || !k->node || check_dims(NULL, k, &d, false) != NTP_STATUS_OK || d.mode != NTP_CTC_BEAM)
        return 0;
    size_t n = ntp__ctc_beam_ws_bytes(d.T, d.C, d.W);
    return n == SIZE_MAX ? 0 : n;
}

ntp_status ntp__ctc_run(ntp_ctx *ctx, const ntp_kargs *k)
{
    ctc_dims d = {0};
    ntp_status st = check_dims(ctx, k, &d, true);
    if (st != NTP_STATUS_OK)
        return st;
    if (d.T == 0 || d.N == 0)
        return NTP_STATUS_OK;
    const float *in = k->in[0].data;
    int32_t *out = k->out[0].data;
    const int64_t stride = d.N * d.C;
    if (d.mode == NTP_CTC_GREEDY) {
        for (int64_t n = 0; n < d.N; n++)
            ntp__ctc_greedy_decode(in + n * d.C, d.T, stride, d.C, out + n * d.T);
        return NTP_STATUS_OK;
    }
    size_t need = ntp__ctc_beam_ws_bytes(d.T, d.C, d.W);
    if (need == SIZE_MAX)
        return ntp__inlay_error(ctx, k, NTP_STATUS_OVERFLOW,
                                "ctc_decode beam of %lld over %lld frames is too large",
                                (long long)d.W, (long long)d.T);
    void *owned;
    void *ws = ntp__inlay_scratch(k, need, &owned);
    if (!ws)
        return ntp__inlay_error(ctx, k, NTP_STATUS_OUT_OF_MEMORY,
                                "out of memory for %zu bytes of beam search scratch", need);
    for (int64_t n = 0; n < d.N; n++)
        ntp__ctc_beam_decode(in + n * d.C, d.T, stride, d.C, d.W, ws, out + n * d.T, NULL);
    free(owned);
    return NTP_STATUS_OK;
}
