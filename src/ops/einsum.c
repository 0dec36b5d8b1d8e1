/* ct_einsum: Einstein summation composed of the core's ops, so that it runs on every device
 * and its gradient comes from the ops it is made of. The equation is parsed into one label
 * per axis (the letters, then the ellipsis' axes right-aligned as broadcasting aligns them);
 * each operand takes its diagonals (a letter repeated in it) and sums out the letters no
 * other operand and not the output has; then the operands are contracted left to right,
 * two at a time, by one batched matmul each (a broadcasting multiplication where nothing is
 * contracted); the result sums what the output lacks and is permuted into the output's
 * order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctensor/linalg.h"
#include "ops/op_impl.h"

#define LETTERS 52                     /* 'A'-'Z' are labels 0-25, 'a'-'z' 26-51 */
#define LABELS (LETTERS + CT_MAX_DIMS) /* then the ellipsis' axes */
#define ELLIPSIS (-1)                  /* the item "..." in a term */
#define MAX_ITEMS (CT_MAX_DIMS + 1)    /* the letters of a term, and its ellipsis */

/* One term of the equation, as written: each item a letter's label or ELLIPSIS. */
typedef struct term {
    int nitems;
    int items[MAX_ITEMS];
    bool ellipsis;
} term;

/* An operand being contracted: a reference to its tensor and the label of each axis. */
typedef struct operand {
    ct_tensor *t;
    int ndim;
    int labels[CT_MAX_DIMS];
} operand;

typedef struct plan {
    const char *equation;
    int n;
    term *terms;   /* n inputs */
    term out_term; /* the explicit output, when `explicit_out` */
    bool explicit_out;
    int ell_ndim; /* the ellipsis' broadcast rank over the operands */
    int out_ndim;
    int out[CT_MAX_DIMS];
    int64_t size[LABELS]; /* each label's broadcast size; -1 when no operand has it */
    int last_use[LABELS]; /* the last operand that has the label; n for the output's; -1 */
} plan;

static int letter_label(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

static char label_letter(int label) {
    return (char)(label < 26 ? 'A' + label : 'a' + (label - 26));
}

static void *fail(const plan *p, ct_status status, const char *what) {
    return ct__fail(status, "ct_einsum(\"%s\"): %s", p->equation, what);
}

/* ---- parsing ---- */

/* Append the item at *s (a letter or "...") to t; false with the error set otherwise.
 * `who` names the term in messages ("operand 1", "the output"). */
static bool parse_item(const plan *p, const char **s, term *t, const char *who) {
    char msg[160];
    int label = letter_label(**s);
    if (label < 0 && strncmp(*s, "...", 3) != 0) {
        unsigned char c = (unsigned char)**s;
        snprintf(msg, sizeof msg,
                 "character '%c' (0x%02x) at position %d of %s's subscripts is not a letter, "
                 "'...', ',', '->' or a space",
                 c >= 32 && c < 127 ? c : '?', c, (int)(*s - p->equation), who);
        return fail(p, CT_ERR_INVALID_ARG, msg), false;
    }
    if (label < 0 && t->ellipsis) {
        snprintf(msg, sizeof msg, "%s has more than one '...'", who);
        return fail(p, CT_ERR_INVALID_ARG, msg), false;
    }
    if (t->nitems - (t->ellipsis ? 1 : 0) >= CT_MAX_DIMS && label >= 0) {
        snprintf(msg, sizeof msg, "%s names more than %d axes (CT_MAX_DIMS)", who, CT_MAX_DIMS);
        return fail(p, CT_ERR_INVALID_ARG, msg), false;
    }
    t->items[t->nitems++] = label >= 0 ? label : ELLIPSIS;
    if (label < 0) t->ellipsis = true;
    *s += label >= 0 ? 1 : 3;
    return true;
}

/* The inputs' terms (exactly n of them) and the explicit output when there is an "->". */
static bool parse_equation(plan *p) {
    int commas = 0;
    const char *arrow = strstr(p->equation, "->");
    for (const char *s = p->equation; *s && s != arrow; s++) commas += *s == ',';
    if (commas + 1 != p->n) {
        char msg[96];
        snprintf(msg, sizeof msg, "the equation has %d operands' subscripts but %d operands came",
                 commas + 1, p->n);
        return fail(p, CT_ERR_INVALID_ARG, msg), false;
    }
    int k = 0;
    char who[32];
    term *t = &p->terms[0];
    for (const char *s = p->equation; *s;) {
        if (p->explicit_out)
            snprintf(who, sizeof who, "the output");
        else
            snprintf(who, sizeof who, "operand %d", k);
        if (*s == ' ') {
            s++;
        } else if (*s == ',' && !p->explicit_out) {
            t = &p->terms[++k];
            s++;
        } else if (*s == ',') {
            return fail(p, CT_ERR_INVALID_ARG, "the output's subscripts have a ','"), false;
        } else if (s == arrow) {
            p->explicit_out = true;
            t = &p->out_term;
            s += 2;
        } else if (!parse_item(p, &s, t, who)) {
            return false;
        }
    }
    return true;
}

/* ---- labels and sizes ---- */

/* Operand k's label for each axis of x (its ellipsis right-aligned among the ell_ndim
 * labels after the letters), with every size checked against the others. */
static bool bind_operand(plan *p, int k, const ct_tensor *x, operand *o) {
    const term *t = &p->terms[k];
    int letters = t->nitems - (t->ellipsis ? 1 : 0), ell = x->ndim - letters;
    char msg[200];
    if (ell < 0 || (!t->ellipsis && ell != 0)) {
        snprintf(msg, sizeof msg, "operand %d has rank %d but its subscripts name %d axes%s", k,
                 x->ndim, letters, t->ellipsis ? " and '...'" : "");
        return fail(p, CT_ERR_SHAPE, msg), false;
    }
    o->ndim = 0;
    for (int i = 0; i < t->nitems; i++)
        if (t->items[i] == ELLIPSIS)
            for (int e = 0; e < ell; e++) o->labels[o->ndim++] = LETTERS + p->ell_ndim - ell + e;
        else
            o->labels[o->ndim++] = t->items[i];
    for (int a = 0; a < o->ndim; a++) {
        int l = o->labels[a];
        int64_t s = x->shape[a], *known = &p->size[l];
        for (int b = 0; b < a; b++)
            if (o->labels[b] == l && x->shape[b] != s) {
                snprintf(msg, sizeof msg,
                         "operand %d repeats subscript '%c' on axes of sizes %lld and %lld (a "
                         "diagonal needs equal sizes)",
                         k, label_letter(l), (long long)x->shape[b], (long long)s);
                return fail(p, CT_ERR_SHAPE, msg), false;
            }
        if (*known == -1 || *known == 1) {
            *known = s;
        } else if (s != 1 && s != *known) {
            if (l < LETTERS)
                snprintf(msg, sizeof msg,
                         "operand %d has size %lld for subscript '%c', an earlier operand %lld", k,
                         (long long)s, label_letter(l), (long long)*known);
            else
                snprintf(msg, sizeof msg,
                         "operand %d's '...' axis %d has size %lld, which does not broadcast "
                         "with an earlier operand's %lld",
                         k, a, (long long)s, (long long)*known);
            return fail(p, CT_ERR_SHAPE, msg), false;
        }
        p->last_use[l] = k;
    }
    return true;
}

/* The output's labels: the explicit term's, or NumPy's implicit output (the ellipsis' axes,
 * then the letters the inputs have once, in ASCII order). */
static bool output_labels(plan *p) {
    int count[LABELS] = {0};
    for (int k = 0; k < p->n; k++)
        for (int i = 0; i < p->terms[k].nitems; i++)
            if (p->terms[k].items[i] != ELLIPSIS) count[p->terms[k].items[i]]++;
    const term *t = &p->out_term;
    bool ellipsis = p->explicit_out ? t->ellipsis : p->ell_ndim > 0;
    int letters = p->explicit_out ? t->nitems - (t->ellipsis ? 1 : 0) : 0;
    for (int l = 0; !p->explicit_out && l < LETTERS; l++) letters += count[l] == 1;
    char msg[160];
    if (letters + (ellipsis ? p->ell_ndim : 0) > CT_MAX_DIMS) {
        snprintf(msg, sizeof msg, "the output would have rank %d (at most %d, CT_MAX_DIMS)",
                 letters + (ellipsis ? p->ell_ndim : 0), CT_MAX_DIMS);
        return fail(p, CT_ERR_INVALID_ARG, msg), false;
    }
    p->out_ndim = 0;
    if (!p->explicit_out) {
        for (int e = 0; e < p->ell_ndim; e++) p->out[p->out_ndim++] = LETTERS + e;
        for (int l = 0; l < LETTERS; l++)
            if (count[l] == 1) p->out[p->out_ndim++] = l;
        return true;
    }
    for (int i = 0; i < t->nitems; i++) {
        int l = t->items[i];
        if (l == ELLIPSIS) {
            for (int e = 0; e < p->ell_ndim; e++) p->out[p->out_ndim++] = LETTERS + e;
            continue;
        }
        const char *why = !count[l] ? "is in no operand" : NULL;
        for (int j = 0; j < i; j++)
            if (t->items[j] == l) why = "is repeated in the output";
        if (why) {
            snprintf(msg, sizeof msg, "output subscript '%c' %s", label_letter(l), why);
            return fail(p, CT_ERR_INVALID_ARG, msg), false;
        }
        p->out[p->out_ndim++] = l;
    }
    return true;
}

/* ---- steps on one operand (each replaces o->t, releasing the old reference) ---- */

static void replace(operand *o, ct_tensor *t) {
    ct_release(o->t);
    o->t = t;
}

static int axis_of(const operand *o, int label) {
    for (int a = 0; a < o->ndim; a++)
        if (o->labels[a] == label) return a;
    return -1;
}

/* The axes of o in the order `labels` (n of o's labels) lists them. */
static void permute_to(operand *o, int n, const int *labels) {
    int perm[CT_MAX_DIMS];
    bool identity = true;
    for (int i = 0; i < n; i++) {
        perm[i] = axis_of(o, labels[i]);
        identity = identity && perm[i] == i;
    }
    if (identity) return;
    replace(o, ct_permute(o->t, n, perm));
    memcpy(o->labels, labels, (size_t)n * sizeof *labels);
}

/* Each label o repeats replaced by one axis, the diagonal, at the end. */
static void take_diagonals(operand *o) {
    for (int i = 0; i < o->ndim; i++)
        for (int j = i + 1; j < o->ndim; j++) {
            if (o->labels[j] != o->labels[i]) continue;
            int order[CT_MAX_DIMS], label = o->labels[i], m = 0;
            for (int a = 0; a < o->ndim; a++)
                if (a != i && a != j) order[m++] = a;
            order[m] = i;
            order[m + 1] = j;
            replace(o, ct_permute(o->t, o->ndim, order));
            replace(o, ct_linalg_diagonal(o->t, 0));
            for (int a = 0; a < m; a++) order[a] = o->labels[order[a]];
            memcpy(o->labels, order, (size_t)m * sizeof *order);
            o->labels[m] = label;
            o->ndim = m + 1;
            i = -1; /* the labels moved: look again from the start */
            break;
        }
}

/* o summed over the axes whose label `drop` marks. */
static void sum_out(operand *o, const bool *drop) {
    int axes[CT_MAX_DIMS], naxes = 0, m = 0;
    for (int a = 0; a < o->ndim; a++)
        if (drop[o->labels[a]])
            axes[naxes++] = a;
        else
            o->labels[m++] = o->labels[a];
    if (!naxes) return;
    replace(o, ct_sum(o->t, naxes, axes, false));
    o->ndim = m;
}

/* ---- contracting two operands ---- */

/* The labels of o in the role `role` marks, in o's order, into out; their count. */
static int labels_in(const operand *o, const int *role, int which, int *out) {
    int n = 0;
    for (int a = 0; a < o->ndim; a++)
        if (role[o->labels[a]] == which) out[n++] = o->labels[a];
    return n;
}

/* o permuted to the label groups g[0], g[1], g[2] and flattened to one axis per group. */
static void as_batched_matrix(operand *o, const int n[3], int g[3][CT_MAX_DIMS]) {
    int order[CT_MAX_DIMS], m = 0;
    int64_t shape[3] = {1, 1, 1};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n[k]; i++) {
            order[m++] = g[k][i];
            shape[k] *= o->t ? o->t->shape[axis_of(o, g[k][i])] : 0;
        }
    permute_to(o, m, order);
    replace(o, ct_reshape(o->t, 3, shape));
}

/* Both operands' size-1 axes stretched to the other's size where they share a label. */
static void broadcast_shared(operand *a, operand *b) {
    int64_t shape_a[CT_MAX_DIMS], shape_b[CT_MAX_DIMS];
    bool stretch = false;
    for (int i = 0; i < a->ndim; i++) shape_a[i] = a->t->shape[i];
    for (int j = 0; j < b->ndim; j++) shape_b[j] = b->t->shape[j];
    for (int i = 0; i < a->ndim; i++) {
        int j = axis_of(b, a->labels[i]);
        if (j < 0 || shape_a[i] == shape_b[j]) continue;
        stretch = true;
        if (shape_a[i] == 1)
            shape_a[i] = shape_b[j];
        else
            shape_b[j] = shape_a[i];
    }
    if (!stretch) return;
    replace(a, ct_expand(a->t, a->ndim, shape_a));
    replace(b, ct_expand(b->t, b->ndim, shape_b));
}

enum { BATCH = 1, FREE_A, FREE_B, CONTRACTED };

/* Each label's role in a times operand b = k: the labels both have and the output or a
 * later operand has are the batch, those both have and nothing later has are contracted,
 * the others free. A free label nothing later has is summed out of its operand first. */
static void assign_roles(const plan *p, int k, operand *a, operand *b, int *role) {
    bool drop_a[LABELS] = {false}, drop_b[LABELS] = {false};
    for (int i = 0; i < a->ndim; i++) role[a->labels[i]] = FREE_A;
    for (int j = 0; j < b->ndim; j++) {
        int l = b->labels[j];
        role[l] = role[l] == FREE_A ? (p->last_use[l] > k ? BATCH : CONTRACTED) : FREE_B;
    }
    for (int l = 0; l < LABELS; l++) {
        drop_a[l] = role[l] == FREE_A && p->last_use[l] <= k;
        drop_b[l] = role[l] == FREE_B && p->last_use[l] <= k;
    }
    sum_out(a, drop_a);
    sum_out(b, drop_b);
}

/* a times b with nothing contracted: a as (batch, a's free, 1 per b's free), b as (batch,
 * 1 per a's free, b's free), multiplied as ct_mul broadcasts. */
static void multiply(operand *a, operand *b, int rank, const int *labels, const int64_t *shape,
                     int nbatch, int nfree_a) {
    int64_t shape_a[CT_MAX_DIMS], shape_b[CT_MAX_DIMS];
    int order_b[CT_MAX_DIMS], m = 0;
    for (int i = 0; i < rank; i++) {
        bool of_a = i < nbatch + nfree_a, of_b = i < nbatch || !of_a;
        shape_a[i] = of_a ? shape[i] : 1;
        shape_b[i] = of_b ? shape[i] : 1;
        if (of_b) order_b[m++] = labels[i];
    }
    permute_to(a, nbatch + nfree_a, labels);
    permute_to(b, m, order_b);
    replace(a, ct_reshape(a->t, rank, shape_a));
    replace(b, ct_reshape(b->t, rank, shape_b));
    replace(a, ct_mul(a->t, b->t));
}

/* a times b contracted over ga[2] (= gb[1]) by one batched matmul, reshaped to shape. */
static void matmul_batched(operand *a, operand *b, const int na[3], int ga[3][CT_MAX_DIMS],
                           const int nb[3], int gb[3][CT_MAX_DIMS], int rank,
                           const int64_t *shape) {
    as_batched_matrix(a, na, ga);
    as_batched_matrix(b, nb, gb);
    replace(a, ct_matmul(a->t, b->t));
    replace(a, ct_reshape(a->t, rank, shape));
}

/* a (the operands up to k - 1, contracted) times operand b = k, as assign_roles says: the
 * result, (batch, a's free, b's free), into a. */
static bool contract(const plan *p, int k, operand *a, operand *b) {
    int role[LABELS] = {0};
    assign_roles(p, k, a, b, role);
    if (!a->t || !b->t) return false;
    broadcast_shared(a, b);
    if (!a->t || !b->t) return false;
    int ga[3][CT_MAX_DIMS], gb[3][CT_MAX_DIMS], na[3], nb[3];
    na[0] = nb[0] = labels_in(a, role, BATCH, ga[0]);
    memcpy(gb[0], ga[0], sizeof ga[0]);
    na[1] = labels_in(a, role, FREE_A, ga[1]);
    na[2] = nb[1] = labels_in(a, role, CONTRACTED, ga[2]);
    memcpy(gb[1], ga[2], sizeof ga[2]);
    nb[2] = labels_in(b, role, FREE_B, gb[2]);
    int rank = na[0] + na[1] + nb[2];
    if (rank > CT_MAX_DIMS) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the product of operands 0 to %d would have rank %d (at most %d, CT_MAX_DIMS)", k,
                 rank, CT_MAX_DIMS);
        return fail(p, CT_ERR_SHAPE, msg), false;
    }
    int64_t shape[CT_MAX_DIMS];
    int labels[CT_MAX_DIMS], m = 0;
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < na[g]; i++) {
            labels[m] = ga[g][i];
            shape[m++] = a->t->shape[axis_of(a, ga[g][i])];
        }
    for (int i = 0; i < nb[2]; i++) {
        labels[m] = gb[2][i];
        shape[m++] = b->t->shape[axis_of(b, gb[2][i])];
    }
    if (na[2])
        matmul_batched(a, b, na, ga, nb, gb, rank, shape);
    else
        multiply(a, b, rank, labels, shape, na[0], na[1]);
    memcpy(a->labels, labels, sizeof labels);
    a->ndim = rank;
    return a->t != NULL;
}

/* ---- the whole ---- */

/* The parsed equation bound to the operands, each operand o[k] holding a new reference. */
static bool prepare(plan *p, const ct_tensor *const *operands, ct_device device, operand *o) {
    if (!parse_equation(p)) return false;
    for (int k = 0; k < p->n; k++) {
        const term *t = &p->terms[k];
        int ell = operands[k]->ndim - (t->nitems - 1);
        if (t->ellipsis && ell > p->ell_ndim) p->ell_ndim = ell;
    }
    for (int l = 0; l < LABELS; l++) p->size[l] = -1, p->last_use[l] = -1;
    for (int k = 0; k < p->n; k++)
        if (!bind_operand(p, k, operands[k], &o[k])) return false;
    if (!output_labels(p)) return false;
    for (int i = 0; i < p->out_ndim; i++) p->last_use[p->out[i]] = p->n;
    for (int k = 0; k < p->n; k++) {
        o[k].t = ct__operand_on(operands[k], device, "ct_einsum");
        if (!o[k].t) return false;
    }
    return true;
}

/* The contracted operands summed over what the output lacks, in the output's order, in the
 * operands' promoted dtype (sums of integers and bools widen it). */
static ct_tensor *finish(const plan *p, operand *r, ct_dtype dtype) {
    bool drop[LABELS] = {false};
    for (int l = 0; l < LABELS; l++) drop[l] = p->last_use[l] >= 0 && p->last_use[l] < p->n;
    sum_out(r, drop);
    if (r->t) permute_to(r, p->out_ndim, p->out);
    bool exact = !ct_dtype_is_floating(dtype) && !ct_dtype_is_complex(dtype);
    if (r->t && exact && r->t->dtype != dtype) replace(r, ct_cast(r->t, dtype));
    ct_tensor *out = r->t;
    r->t = NULL;
    return out;
}

static ct_tensor *einsum(plan *p, const ct_tensor *const *operands, operand *o) {
    ct_device device;
    if (!ct__check_args_complex("ct_einsum", p->n, operands, &device)) return NULL;
    if (!prepare(p, operands, device, o)) return NULL;
    ct_dtype dtype = operands[0]->dtype;
    for (int k = 1; k < p->n; k++) dtype = ct_promote_types(dtype, operands[k]->dtype);
    for (int k = 0; k < p->n; k++) take_diagonals(&o[k]);
    for (int k = 1; k < p->n; k++)
        if (!contract(p, k, &o[0], &o[k])) return NULL;
    return o[0].t ? finish(p, &o[0], dtype) : NULL;
}

ct_tensor *ct_einsum(const char *equation, int n, const ct_tensor *const *operands) {
    if (!equation || n < 1 || !operands)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_einsum: needs an equation and at least one operand (got %s, %d)",
                        equation ? equation : "NULL", n);
    plan p = {.equation = equation, .n = n};
    p.terms = calloc((size_t)n, sizeof *p.terms);
    operand *o = calloc((size_t)n, sizeof *o);
    ct_tensor *out = p.terms && o ? einsum(&p, operands, o)
                                  : ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_einsum: %d operands", n);
    for (int k = 0; o && k < n; k++) ct_release(o[k].t);
    free(o);
    free(p.terms);
    return out;
}
