/* The fit behind a calibration: non-negative least squares on relative
 * error, solved exactly by trying every active set.
 *
 * With at most a handful of terms there are at most 2^k active sets; the
 * constrained optimum is the unconstrained least-squares solution on its
 * own positive set (the KKT conditions), so the best feasible one among
 * all sets is the answer. No iteration, no tolerance to tune, and a test
 * can check it against hand-computed coefficients. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "ntprof/predict.h"

#define MAX_TERMS (NTP_PREDICT_TERMS + 1)

/* Solve the k x k system A y = b by Gaussian elimination with partial
 * pivoting; false when A is singular (a term that is zero on every
 * sample, or two proportional terms). */
static bool solve(double A[MAX_TERMS][MAX_TERMS], double *b, int k, double *y)
{
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(A[r][c]) > fabs(A[p][c]))
                p = r;
        double scale = 0;
        for (int r = 0; r < k; r++)
            scale = fmax(scale, fabs(A[r][c]));
        if (!(fabs(A[p][c]) > 1e-12 * scale) || scale == 0)
            return false;
        if (p != c) {
            for (int j = 0; j < k; j++) {
                double t = A[c][j];
                A[c][j] = A[p][j];
                A[p][j] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int r = c + 1; r < k; r++) {
            double f = A[r][c] / A[c][c];
            for (int j = c; j < k; j++)
                A[r][j] -= f * A[c][j];
            b[r] -= f * b[c];
        }
    }
    for (int c = k - 1; c >= 0; c--) {
        double s = b[c];
        for (int j = c + 1; j < k; j++)
            s -= A[c][j] * y[j];
        y[c] = s / A[c][c];
    }
    return true;
}

bool ntp_predict_fit(const double *X, const double *t, int n, int n_terms, double *x)
{
    if (n < 1 || n_terms < 1 || n_terms > MAX_TERMS)
        return false;
    for (int i = 0; i < n; i++)
        if (!(t[i] > 0) || !isfinite(t[i]))
            return false;
    /* Relative error: each sample's row and target divided by its time,
     * so a 10 us layer weighs as much as a 10 ms one. Normal equations of
     * the scaled system, G = Z'Z and h = Z'1. */
    double G[MAX_TERMS][MAX_TERMS] = {{0}}, h[MAX_TERMS] = {0};
    for (int i = 0; i < n; i++)
        for (int a = 0; a < n_terms; a++) {
            double za = X[i * n_terms + a] / t[i];
            h[a] += za;
            for (int b = 0; b < n_terms; b++)
                G[a][b] += za * X[i * n_terms + b] / t[i];
        }
    double best = INFINITY;
    bool found = false;
    for (unsigned set = 1; set < (1u << n_terms); set++) {
        int idx[MAX_TERMS], k = 0;
        for (int a = 0; a < n_terms; a++)
            if (set & (1u << a))
                idx[k++] = a;
        double A[MAX_TERMS][MAX_TERMS], b[MAX_TERMS], y[MAX_TERMS];
        for (int r = 0; r < k; r++) {
            b[r] = h[idx[r]];
            for (int c = 0; c < k; c++)
                A[r][c] = G[idx[r]][idx[c]];
        }
        if (!solve(A, b, k, y))
            continue;
        bool feasible = true;
        for (int r = 0; r < k; r++)
            feasible &= y[r] >= 0;
        if (!feasible)
            continue;
        /* Residual sum of squares of the scaled system. */
        double rss = 0;
        for (int i = 0; i < n; i++) {
            double p = 0;
            for (int r = 0; r < k; r++)
                p += X[i * n_terms + idx[r]] * y[r];
            double e = p / t[i] - 1;
            rss += e * e;
        }
        if (rss < best * (1 - 1e-12)) {
            best = rss;
            found = true;
            memset(x, 0, (size_t)n_terms * sizeof *x);
            for (int r = 0; r < k; r++)
                x[idx[r]] = y[r];
        }
    }
    /* Every set singular or infeasible: all zero is still feasible. */
    if (!found)
        memset(x, 0, (size_t)n_terms * sizeof *x);
    return true;
}
