/* The CTC loss (Graves et al. 2006) in log space, as torch.nn.CTCLoss
 * computes it with its defaults (reduction "mean", zero_infinity false):
 * logits [T, N, C] time-major, log-softmax over the C classes, the blank is
 * the last class (C - 1, as ntprof's ctc_decode inlay reads it), sequence b
 * reads its first in_len[b] frames (all T without in_len; the frames after
 * take no gradient, as torch's input_lengths), labels [N, S] with -1 after
 * each sequence's end. The loss is the mean over the batch of
 * −ln p(l | x) / |l|.
 *
 * α_t(s) and β_t(s) run over the label with blanks around and between its
 * symbols (2|l| + 1 states) and both include the frame's own emission, so
 * the gradient on the logits is
 *   ∂(−ln p)/∂x_t(c) = y_t(c) − Σ_{s: l'(s) = c} exp(α_t(s) + β_t(s) − ln y_t(c) − ln p)
 * with y the softmax (Graves 2006, eq. 16). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train-impl.h"

static double lse2(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

int64_t ntp__train_ctc_length(const double *labels, int64_t S)
{
    int64_t L = 0;
    while (L < S && labels[L] >= 0)
        L++;
    return L;
}

int64_t ntp__train_ctc_frames_needed(const double *labels, int64_t S)
{
    int64_t L = ntp__train_ctc_length(labels, S), need = L;
    for (int64_t i = 1; i < L; i++)
        need += labels[i] == labels[i - 1];
    return need;
}

int64_t ntp__train_ctc_scratch(int64_t T, int64_t C, int64_t S)
{
    return T * C + 2 * T * (2 * S + 1) + C;
}

double ntp__train_ctc(const double *x, const double *labels, const int64_t *in_len, int64_t T,
                      int64_t N, int64_t C, int64_t S, double *dx, double *scratch)
{
    const int64_t blank = C - 1, SS = 2 * S + 1;
    double *lp = scratch, *al = lp + T * C, *be = al + T * SS, *acc = be + T * SS;
    double total = 0.0;
    for (int64_t b = 0; b < N; b++) {
        const double *lab = labels + b * S;
        int64_t L = ntp__train_ctc_length(lab, S), Sx = 2 * L + 1;
        const int64_t Tb = in_len ? in_len[b] : T;
        for (int64_t t = Tb; t < T; t++)
            memset(dx + (t * N + b) * C, 0, (size_t)C * sizeof *dx);
        /* log-softmax of every frame of this sequence */
        for (int64_t t = 0; t < Tb; t++) {
            const double *xr = x + (t * N + b) * C;
            double mx = -INFINITY, sum = 0.0;
            for (int64_t c = 0; c < C; c++)
                mx = xr[c] > mx ? xr[c] : mx;
            for (int64_t c = 0; c < C; c++)
                sum += exp(xr[c] - mx);
            for (int64_t c = 0; c < C; c++)
                lp[t * C + c] = xr[c] - mx - log(sum);
        }
#define LAB_(s) ((s) % 2 ? (int64_t)lab[(s) / 2] : blank)
#define SKIP_(s) ((s) % 2 && (s) >= 2 && lab[(s) / 2] != lab[(s) / 2 - 1])
        for (int64_t s = 0; s < Sx; s++)
            al[s] = s < 2 ? lp[LAB_(s)] : -INFINITY;
        for (int64_t t = 1; t < Tb; t++)
            for (int64_t s = 0; s < Sx; s++) {
                const double *ap = al + (t - 1) * SS;
                double a = ap[s];
                if (s >= 1)
                    a = lse2(a, ap[s - 1]);
                if (SKIP_(s))
                    a = lse2(a, ap[s - 2]);
                al[t * SS + s] = a + lp[t * C + LAB_(s)];
            }
        for (int64_t s = 0; s < Sx; s++)
            be[(Tb - 1) * SS + s] = s >= Sx - 2 ? lp[(Tb - 1) * C + LAB_(s)] : -INFINITY;
        for (int64_t t = Tb - 2; t >= 0; t--)
            for (int64_t s = 0; s < Sx; s++) {
                const double *bn = be + (t + 1) * SS;
                double v = bn[s];
                if (s + 1 < Sx)
                    v = lse2(v, bn[s + 1]);
                if (s + 2 < Sx && SKIP_(s + 2))
                    v = lse2(v, bn[s + 2]);
                be[t * SS + s] = v + lp[t * C + LAB_(s)];
            }
        double ll = al[(Tb - 1) * SS + Sx - 1];
        if (Sx > 1)
            ll = lse2(ll, al[(Tb - 1) * SS + Sx - 2]);
        double w = 1.0 / ((double)(L > 0 ? L : 1) * (double)N);
        total += -ll * w;
        for (int64_t t = 0; t < Tb; t++) {
            for (int64_t c = 0; c < C; c++)
                acc[c] = -INFINITY;
            for (int64_t s = 0; s < Sx; s++)
                acc[LAB_(s)] = lse2(acc[LAB_(s)], al[t * SS + s] + be[t * SS + s]);
            double *d = dx + (t * N + b) * C;
            for (int64_t c = 0; c < C; c++)
                d[c] = w * (exp(lp[t * C + c]) - exp(acc[c] - lp[t * C + c] - ll));
        }
#undef LAB_
#undef SKIP_
    }
    return total;
}
