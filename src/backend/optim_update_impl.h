/* The per-element optimiser updates, written once for the CPU and CUDA kernels (header-only;
 * host and device functions under nvcc), so both backends apply the same formulas in the
 * same order: PyTorch's single-tensor SGD and Adam (torch/optim/sgd.py, adam.py, maximize
 * False). An f32 parameter computes in float and an f64 one in double, as PyTorch does; the
 * hyperparameters are combined in double first (PyTorch combines them as Python floats) and
 * then rounded to the element type. */
#ifndef CT_OPTIM_UPDATE_IMPL_H
#define CT_OPTIM_UPDATE_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/optim_args_impl.h"

#ifdef __CUDACC__
#define CT_OPTIM_FN static __host__ __device__ __forceinline__
#else
#define CT_OPTIM_FN static inline
#endif

/* For each element type T (named S in function names): the coefficients of one tensor's
 * update and the update of one element.
 *
 * SGD: g += wd * p; buf = fresh ? g : momentum * buf + (1 - dampening) * g;
 *      g = nesterov ? g + momentum * buf : buf; p -= lr * g.
 * Adam: (AdamW: p *= 1 - lr * wd; Adam: g += wd * p); m = lerp(m, g, 1 - beta1);
 *      v = beta2 * v + (1 - beta2) * g * g; (amsgrad: vmax = max(vmax, v), NaN first, and v
 *      reads vmax); p -= step_size * m / (sqrt(v) / bias_correction2_sqrt + eps). */
#define CT_OPTIM_DEFINE_(T, S, SQRT)                                                               \
    typedef struct ct__sgd_coef_##S {                                                              \
        T lr, momentum, damp, wd;                                                                  \
        bool nesterov, fresh;                                                                      \
    } ct__sgd_coef_##S;                                                                            \
                                                                                                   \
    CT_OPTIM_FN ct__sgd_coef_##S ct__sgd_coef_make_##S(const ct__optim_args *a,                    \
                                                       const ct__optim_tensor *t) {                \
        ct__sgd_coef_##S c;                                                                        \
        c.lr = (T)a->lr;                                                                           \
        c.momentum = (T)a->momentum;                                                               \
        c.damp = (T)(1.0 - a->dampening);                                                          \
        c.wd = (T)a->weight_decay;                                                                 \
        c.nesterov = a->nesterov;                                                                  \
        c.fresh = t->fresh;                                                                        \
        return c;                                                                                  \
    }                                                                                              \
                                                                                                   \
    CT_OPTIM_FN void ct__sgd_update_##S(const ct__sgd_coef_##S *c, T *p, T g, T *buf) {            \
        T pv = *p;                                                                                 \
        if (c->wd != 0) g = g + c->wd * pv;                                                        \
        if (c->momentum != 0) {                                                                    \
            T b = c->fresh ? g : *buf * c->momentum + c->damp * g;                                 \
            *buf = b;                                                                              \
            g = c->nesterov ? g + c->momentum * b : b;                                             \
        }                                                                                          \
        *p = pv - c->lr * g;                                                                       \
    }                                                                                              \
                                                                                                   \
    typedef struct ct__adam_coef_##S {                                                             \
        T decay, wd, w1, beta2, w2, step_size, bc2_sqrt, eps;                                      \
        bool decoupled, amsgrad;                                                                   \
    } ct__adam_coef_##S;                                                                           \
                                                                                                   \
    CT_OPTIM_FN ct__adam_coef_##S ct__adam_coef_make_##S(const ct__optim_args *a,                  \
                                                         const ct__optim_tensor *t) {              \
        ct__adam_coef_##S c;                                                                       \
        c.decoupled = a->kind == CT_OPTIM_ADAMW;                                                   \
        c.decay = (T)(1.0 - a->lr * a->weight_decay);                                              \
        c.wd = (T)a->weight_decay;                                                                 \
        c.w1 = (T)(1.0 - a->beta1);                                                                \
        c.beta2 = (T)a->beta2;                                                                     \
        c.w2 = (T)(1.0 - a->beta2);                                                                \
        c.step_size = (T)t->step_size;                                                             \
        c.bc2_sqrt = (T)t->bias_correction2_sqrt;                                                  \
        c.eps = (T)a->eps;                                                                         \
        c.amsgrad = a->amsgrad;                                                                    \
        return c;                                                                                  \
    }                                                                                              \
                                                                                                   \
    CT_OPTIM_FN void ct__adam_update_##S(const ct__adam_coef_##S *c, T *p, T g, T *m, T *v,        \
                                         T *vmax) {                                                \
        T pv = *p;                                                                                 \
        if (c->decoupled)                                                                          \
            pv = pv * c->decay;                                                                    \
        else if (c->wd != 0)                                                                       \
            g = g + c->wd * pv;                                                                    \
        /* torch.lerp's two forms, chosen by the weight as ATen does. */                           \
        T mv = *m;                                                                                 \
        mv = c->w1 < (T)0.5 ? mv + c->w1 * (g - mv) : g - (g - mv) * ((T)1 - c->w1);               \
        *m = mv;                                                                                   \
        T vv = *v * c->beta2 + c->w2 * g * g;                                                      \
        *v = vv;                                                                                   \
        if (c->amsgrad) {                                                                          \
            T mx = *vmax;                                                                          \
            mx = (vv > mx || vv != vv) ? vv : mx;                                                  \
            *vmax = mx;                                                                            \
            vv = mx;                                                                               \
        }                                                                                          \
        T denom = SQRT(vv) / c->bc2_sqrt + c->eps;                                                 \
        *p = pv - c->step_size * (mv / denom);                                                     \
    }

CT_OPTIM_DEFINE_(float, f32, sqrtf)
CT_OPTIM_DEFINE_(double, f64, sqrt)

#undef CT_OPTIM_DEFINE_

/* A gradient element's contribution to a p-norm: |x|^p (p finite; squares and magnitudes
 * exactly), or |x| for the largest magnitude (p infinite). */
CT_OPTIM_FN double ct__norm_term(double x, double p) {
    double a = fabs(x);
    if (p == 2.0) return a * a;
    if (p == 1.0 || isinf(p)) return a;
    return pow(a, p);
}

/* The larger of two norm partials, NaN first (a NaN gradient makes the norm NaN). */
CT_OPTIM_FN double ct__norm_max(double a, double b) { return (a > b || a != a) ? a : b; }

#endif
