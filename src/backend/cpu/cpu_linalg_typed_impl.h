/* One dtype's LAPACK calls for one matrix each (cpu_linalg.c includes this once per dtype,
 * with T the element type, R the real type of its parts, COMPLEX 1 for a complex T, ABS(x)
 * the magnitude of a T as an R, LAPACK(name) the routine of T's prefix (s, d, c, z),
 * REAL_LAPACK(name) that of R's (s, d), GEMM_NN(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
 * CBLAS's column-major GEMM of T with alpha and beta Ts, and TYPED(name) the function's name). A
 * complex T takes the Hermitian and unitary routines: heevd for syevd, ungqr for orgqr, and gesdd
 * and heevd with their real work arrays. Each returns LAPACK's info: 0, > 0 when the matrix is bad
 * (its op's contract in backend/linalg_args_impl.h), or CT_LINALG_NO_MEMORY. Matrices are
 * column-major. */

/* l: the matrix on entry (in place). */
static lapack_int TYPED(cholesky)(lapack_int n, T *l) {
    lapack_int info = 0;
    if (n == 0) return 0; /* LAPACK refuses the leading dimension 0 of an empty matrix */
    LAPACK(potrf)("L", &n, l, &n, &info);
    for (lapack_int j = 1; j < n; j++)
        for (lapack_int i = 0; i < j; i++) l[(size_t)j * n + i] = 0;
    return info;
}

/* at: the transpose of the matrix of the system (its row-major copy, read column-major). */
static lapack_int TYPED(solve)(lapack_int n, lapack_int k, T *at, T *x) {
    if (n == 0) return 0; /* an empty system: nothing to solve */
    lapack_int *pivots = malloc(((size_t)n + 1) * sizeof *pivots), info = 0;
    if (!pivots) return CT_LINALG_NO_MEMORY;
    LAPACK(getrf)(&n, &n, at, &n, pivots, &info);
    if (info == 0) LAPACK(getrs)("T", &n, &k, at, &n, pivots, x, &n, &info);
    free(pivots);
    return info;
}

/* sign: det / |det| (0 when singular); logabs: log |det| (-inf then); det itself. a may be
 * the matrix or its transpose: their determinants are one. */
static lapack_int TYPED(det)(lapack_int n, T *a, T *sign, R *logabs, T *det) {
    if (n == 0) { /* the empty product: det 1 */
        if (sign) *sign = 1;
        if (logabs) *logabs = 0;
        if (det) *det = 1;
        return 0;
    }
    lapack_int *pivots = malloc(((size_t)n + 1) * sizeof *pivots), info = 0;
    if (!pivots) return CT_LINALG_NO_MEMORY;
    LAPACK(getrf)(&n, &n, a, &n, pivots, &info);
    T s = 1, product = 1;
    R log_sum = 0;
    if (info > 0) {
        s = 0, log_sum = -(R)INFINITY, product = 0;
    } else {
        for (lapack_int i = 0; i < n; i++) {
            T d = a[(size_t)i * n + i];
            R magnitude = ABS(d);
            if (pivots[i] != i + 1) s = -s, product = -product;
#if COMPLEX
            s *= d / magnitude;
#else
            if (d < 0) s = -s;
#endif
            log_sum += (R)log((double)magnitude);
            product *= d;
        }
    }
    free(pivots);
    if (sign) *sign = s;
    if (logabs) *logabs = log_sum;
    if (det) *det = product;
    return info > 0 ? 0 : info;
}

/* a: the matrix, overwritten (with the eigenvectors when v). */
static lapack_int TYPED(eigh)(lapack_int n, T *a, R *w, bool v) {
    if (n == 0) return 0; /* no eigenvalues */
    const char *job = v ? "V" : "N";
    lapack_int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
    T work_size = 0;
#if COMPLEX
    lapack_int lrwork = -1;
    R rwork_size = 0;
    LAPACK(heevd)
    (job, "L", &n, a, &n, w, &work_size, &lwork, &rwork_size, &lrwork, &iwork_size, &liwork, &info);
    lrwork = (lapack_int)rwork_size + 1;
    R *rwork = malloc((size_t)lrwork * sizeof(R));
#else
    LAPACK(syevd)(job, "L", &n, a, &n, w, &work_size, &lwork, &iwork_size, &liwork, &info);
#endif
    lwork = (lapack_int)work_size + 1, liwork = iwork_size + 1;
    T *work = info == 0 ? malloc((size_t)lwork * sizeof(T)) : NULL;
    lapack_int *iwork = info == 0 ? malloc((size_t)liwork * sizeof *iwork) : NULL;
#if COMPLEX
    if (info == 0 && work && iwork && rwork) LAPACK(heevd)
    (job, "L", &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info);
    else if (info == 0) info = CT_LINALG_NO_MEMORY;
    free(rwork);
#else
    if (info == 0 && work && iwork)
        LAPACK(syevd)(job, "L", &n, a, &n, w, work, &lwork, iwork, &liwork, &info);
    else if (info == 0)
        info = CT_LINALG_NO_MEMORY;
#endif
    free(work);
    free(iwork);
    return info;
}

/* The largest |a_ij| of a rows x cols matrix, or of its lower triangle; NaN when one is. */
static R TYPED(max_abs)(lapack_int rows, lapack_int cols, const T *a, bool lower) {
    R largest = 0;
    for (lapack_int j = 0; j < cols; j++)
        for (lapack_int i = lower ? j : 0; i < rows; i++) {
            R magnitude = ABS(a[(size_t)j * rows + i]);
            if (!(magnitude <= largest)) largest = magnitude; /* a NaN sticks */
        }
    return largest;
}

/* Whether LAPACK's drivers (syevd, gesdd) leave a matrix of this largest |element| unscaled:
 * 0, or within [sqrt(smallest) / eps, its inverse] (gesdd's range, inside syevd's). Not NaN. */
static bool TYPED(unscaled)(R largest) {
    const double eps = sizeof(R) == sizeof(double) ? DBL_EPSILON : FLT_EPSILON;
    const double low = sqrt(sizeof(R) == sizeof(double) ? DBL_MIN : FLT_MIN) / eps;
    return largest == 0 || (largest >= low && largest <= 1 / low);
}

/* c (m x n) = a (m x k) b (k x n), all column-major with leading dimensions m, m and k, the
 * columns of b and c split over `threads` threads (OpenBLAS single-threaded in each). */
static void TYPED(gemm_over_threads)(lapack_int m, lapack_int n, lapack_int k, const T *a,
                                     const T *b, T *c, int threads) {
    lapack_int each = (n + threads - 1) / threads;
    const T one = 1, zero = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int t = 0; t < threads; t++) {
        lapack_int first = (lapack_int)t * each, cols = n - first < each ? n - first : each;
        if (cols > 0)
            GEMM_NN(m, cols, k, one, a, m, b + (size_t)first * k, k, zero, c + (size_t)first * m,
                    m);
    }
}

/* eigh with vectors on `threads` (>= 2) threads, in syevd's stages (LAPACK's dsyevd.f,
 * zheevd.f): the reduction to tridiagonal form T = Q^H A Q (sytrd, hetrd); then, at once, T's
 * eigenvectors Z by divide and conquer (stedc) on one thread and Q itself (orgtr, ungtr) on
 * another; then the eigenvectors Q Z, a GEMM split by columns over every thread. syevd applies
 * the reflectors to Z instead (ormtr), which must wait for Z: forming Q beside stedc hides
 * most of that cost. OpenBLAS stays single-threaded in each call: its own threads made the
 * reduction and stedc slower in ctensor's process (docs/PERFORMANCE.md). A matrix that syevd
 * might scale first, or that holds a NaN, goes to syevd itself, so those cases stay syevd's. */
#if COMPLEX
#define TRIDIAGONAL LAPACK(hetrd)
#define FORM_Q LAPACK(ungtr)
#define STEDC_WORK(work, lwork) work, lwork, rwork, &lrwork, iwork, &liwork, &info
#else
#define TRIDIAGONAL LAPACK(sytrd)
#define FORM_Q LAPACK(orgtr)
#define STEDC_WORK(work, lwork) work, lwork, iwork, &liwork, &info
#endif
static lapack_int TYPED(eigh_split)(lapack_int n, T *a, R *w, int threads) {
    if (!TYPED(unscaled)(TYPED(max_abs)(n, n, a, true))) return TYPED(eigh)(n, a, w, true);
    lapack_int info = 0, q_info = 0, lwork = -1, liwork = -1, iwork_size = 0;
    lapack_int *iwork = &iwork_size;
    T reduce_size = 0, stedc_size = 0, q_size = 0;
#if COMPLEX
    lapack_int lrwork = -1;
    R rwork_size = 0, *rwork = &rwork_size;
#endif
    TRIDIAGONAL("L", &n, a, &n, w, w, a, &reduce_size, &lwork, &info);
    if (info == 0) LAPACK(stedc)("I", &n, w, w, a, &n, STEDC_WORK(&stedc_size, &lwork));
    if (info == 0) FORM_Q("L", &n, a, &n, a, &q_size, &lwork, &info);
    if (info != 0) return info;
    lapack_int q_lwork = (lapack_int)ABS(q_size) + 1;
    lwork = (lapack_int)ABS(reduce_size) + 1;
    if (lwork < (lapack_int)ABS(stedc_size) + 1) lwork = (lapack_int)ABS(stedc_size) + 1;
    liwork = iwork_size + 1;
    /* One block: the T arrays, then the R ones, then the integers (each starts aligned). */
    size_t area = (size_t)n * (size_t)n,
           ts = 2 * area + (size_t)n + (size_t)lwork + (size_t)q_lwork;
    size_t rs = (size_t)n;
#if COMPLEX
    lrwork = (lapack_int)rwork_size + 1;
    rs += (size_t)lrwork;
#endif
    work_block *block = take_work(ts * sizeof(T) + rs * sizeof(R) + (size_t)liwork * sizeof *iwork);
    if (!block) return CT_LINALG_NO_MEMORY;
    T *q = (T *)block->data, *z = q + area, *tau = z + area, *work = tau + n;
    R *off_diagonal = (R *)(work + lwork + q_lwork);
#if COMPLEX
    rwork = off_diagonal + n;
#endif
    iwork = (lapack_int *)(off_diagonal + rs);
    TRIDIAGONAL("L", &n, a, &n, w, off_diagonal, tau, work, &lwork, &info);
    if (info == 0) {
#ifdef _OPENMP
#pragma omp parallel sections num_threads(2)
#endif
        {
#ifdef _OPENMP
#pragma omp section
#endif
            LAPACK(stedc)("I", &n, w, off_diagonal, z, &n, STEDC_WORK(work, &lwork));
#ifdef _OPENMP
#pragma omp section
#endif
            {
                memcpy(q, a, area * sizeof(T));
                FORM_Q("L", &n, q, &n, tau, work + lwork, &q_lwork, &q_info);
            }
        }
        if (info == 0) info = q_info;
    }
    if (info == 0) TYPED(gemm_over_threads)(n, n, n, q, z, a, threads);
    give_work(block);
    return info;
}
#undef TRIDIAGONAL
#undef FORM_Q
#undef STEDC_WORK

/* The identity in a rows x cols column-major matrix. */
static void TYPED(identity)(lapack_int rows, lapack_int cols, T *x) {
    memset(x, 0, (size_t)rows * (size_t)cols * sizeof(T));
    for (lapack_int i = 0; i < rows && i < cols; i++) x[(size_t)i * rows + i] = 1;
}

static lapack_int TYPED(svd)(lapack_int m, lapack_int n, bool full, T *a, R *s, T *u, T *vt) {
    lapack_int k = m < n ? m : n, ucols = full ? m : k, vrows = full ? n : k;
    if (k == 0) { /* no values; the full factors of an empty matrix are identities */
        if (u) TYPED(identity)(m, ucols, u);
        if (vt) TYPED(identity)(vrows, n, vt);
        return 0;
    }
    const char *job = u ? (full ? "A" : "S") : "N";
    lapack_int ldu = m, ldvt = vrows > 0 ? vrows : 1, info = 0, lwork = -1;
    T work_size = 0;
    lapack_int *iwork = malloc(8 * (size_t)k * sizeof *iwork);
#if COMPLEX
    /* gesdd's RWORK: LRWORK of its documentation (LAPACK 3.7 and later), whichever job. */
    size_t big = (size_t)(m > n ? m : n), small = (size_t)k;
    size_t lrwork = small * (5 * small + 7) > 2 * big * small + 2 * small * small + small
                        ? small * (5 * small + 7)
                        : 2 * big * small + 2 * small * small + small;
    R *rwork = malloc(lrwork * sizeof(R));
    if (!rwork) info = CT_LINALG_NO_MEMORY;
#define GESDD_WORK(work) work, &lwork, rwork, iwork, &info
#else
#define GESDD_WORK(work) work, &lwork, iwork, &info
#endif
    if (!iwork) info = CT_LINALG_NO_MEMORY;
    if (info == 0) LAPACK(gesdd)(job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, GESDD_WORK(&work_size));
    if (info == 0) {
        lwork = (lapack_int)work_size + 1;
        T *work = malloc((size_t)lwork * sizeof(T));
        if (work)
            LAPACK(gesdd)(job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, GESDD_WORK(work));
        else
            info = CT_LINALG_NO_MEMORY;
        free(work);
    }
#undef GESDD_WORK
#if COMPLEX
    free(rwork);
#endif
    free(iwork);
    /* gesdd refuses a matrix holding a NaN as its argument 4: no values, as no convergence. */
    return info == -4 ? 1 : info;
}

/* svd with vectors of an m x n matrix, m >= n but less than gesdd's 11/6 n (above which
 * gesdd factors QR first), on `threads` (>= 2) threads, in gesdd's stages (dgesdd.f, zgesdd.f):
 * the reduction to bidiagonal form A = Q B P^H (gebrd); then, at once, B = Ub S Vb^T by divide
 * and conquer (the real bdsdc) on one thread and Q and P^H themselves (orgbr, ungbr) on
 * another; then U = Q Ub and V^H = Vb^T P^H, GEMMs split by columns over every thread, where
 * gesdd applies the reflectors after bdsdc (ormbr). With full, U's last m - n columns are Q's.
 * Any other shape, a matrix gesdd might scale first, or one holding a NaN goes to gesdd. */
#if COMPLEX
#define FORM_QP LAPACK(ungbr)
#else
#define FORM_QP LAPACK(orgbr)
#endif
static lapack_int TYPED(svd_split)(lapack_int m, lapack_int n, bool full, T *a, R *s, T *u, T *vt,
                                   int threads) {
    if (m < n || m >= (lapack_int)((double)n * 11.0 / 6.0) ||
        !TYPED(unscaled)(TYPED(max_abs)(m, n, a, false)))
        return TYPED(svd)(m, n, full, a, s, u, vt);
    lapack_int qcols = full ? m : n, info = 0, q_info = 0, lwork = -1;
    T reduce_size = 0, q_size = 0, p_size = 0;
    LAPACK(gebrd)(&m, &n, a, &m, s, s, a, a, &reduce_size, &lwork, &info);
    if (info == 0) FORM_QP("Q", &m, &qcols, &n, a, &m, a, &q_size, &lwork, &info);
    if (info == 0) FORM_QP("P", &n, &n, &m, a, &n, a, &p_size, &lwork, &info);
    if (info != 0) return info;
    lwork = (lapack_int)ABS(reduce_size) + 1;
    if (lwork < (lapack_int)ABS(q_size) + 1) lwork = (lapack_int)ABS(q_size) + 1;
    if (lwork < (lapack_int)ABS(p_size) + 1) lwork = (lapack_int)ABS(p_size) + 1;
    /* One block: the T arrays, then the R ones, then the integers (each starts aligned). */
    size_t area = (size_t)n * (size_t)n, q_area = (size_t)m * (size_t)qcols;
    size_t ts = q_area + area + 2 * (size_t)n + (size_t)lwork + (COMPLEX ? 2 * area : 0);
    size_t rs = 2 * (size_t)n + 2 * area + (3 * area + 4 * (size_t)n); /* bdsdc's work last */
    work_block *block =
        take_work(ts * sizeof(T) + rs * sizeof(R) + 8 * (size_t)n * sizeof(lapack_int));
    if (!block) return CT_LINALG_NO_MEMORY;
    T *q = (T *)block->data, *p = q + q_area, *tauq = p + area, *taup = tauq + n;
    T *work = taup + n;
#if COMPLEX
    T *ub_t = work + lwork, *vbt_t = ub_t + area; /* Ub and Vb^T made complex for the GEMMs */
    R *e = (R *)(vbt_t + area);
#else
    R *e = work + lwork;
#endif
    R *ub = e + n, *vbt = ub + area, *bdsdc_work = vbt + area, unused_q = 0;
    lapack_int *iwork = (lapack_int *)(bdsdc_work + 3 * area + 4 * (size_t)n), unused_iq = 0;
    LAPACK(gebrd)(&m, &n, a, &m, s, e, tauq, taup, work, &lwork, &info);
    if (info == 0) {
#ifdef _OPENMP
#pragma omp parallel sections num_threads(2)
#endif
        {
#ifdef _OPENMP
#pragma omp section
#endif
            REAL_LAPACK(bdsdc)
            ("U", "I", &n, s, e, ub, &n, vbt, &n, &unused_q, &unused_iq, bdsdc_work, iwork, &info);
#ifdef _OPENMP
#pragma omp section
#endif
            {
                memcpy(q, a, (size_t)m * (size_t)n * sizeof(T));
                FORM_QP("Q", &m, &qcols, &n, q, &m, tauq, work, &lwork, &q_info);
                for (lapack_int j = 0; j < n; j++)
                    memcpy(p + (size_t)j * n, a + (size_t)j * m, (size_t)n * sizeof(T));
                if (q_info == 0) FORM_QP("P", &n, &n, &m, p, &n, taup, work, &lwork, &q_info);
            }
        }
        if (info == 0) info = q_info;
    }
    if (info == 0) {
#if COMPLEX
        for (size_t i = 0; i < area; i++) ub_t[i] = ub[i], vbt_t[i] = vbt[i];
#else
        T *ub_t = ub, *vbt_t = vbt; /* real already */
#endif
        TYPED(gemm_over_threads)(m, n, n, q, ub_t, u, threads);
        TYPED(gemm_over_threads)(n, n, n, vbt_t, p, vt, threads);
        if (full) /* U's last m - n columns: Q's */
            memcpy(u + (size_t)m * n, q + (size_t)m * n, (size_t)m * (size_t)(m - n) * sizeof(T));
    }
    give_work(block);
    return info;
}
#undef FORM_QP

static lapack_int TYPED(qr)(lapack_int m, lapack_int n, bool full, T *a, T *q, T *r) {
    lapack_int k = m < n ? m : n, qcols = full ? m : k, rrows = full ? m : k, info = 0;
    T *tau = malloc(((size_t)k + 1) * sizeof(T)), work_size = 0;
    if (!tau) return CT_LINALG_NO_MEMORY;
    lapack_int lwork = -1, lda = m > 0 ? m : 1;
    if (m > 0 && n > 0) LAPACK(geqrf)(&m, &n, a, &lda, tau, &work_size, &lwork, &info);
    lapack_int geqrf_work = (lapack_int)work_size + 1;
    work_size = 0;
    if (info == 0 && m > 0) ORGQR(&m, &qcols, &k, q, &lda, tau, &work_size, &lwork, &info);
    lwork = geqrf_work > (lapack_int)work_size + 1 ? geqrf_work : (lapack_int)work_size + 1;
    T *work = info == 0 ? malloc((size_t)lwork * sizeof(T)) : NULL;
    if (info == 0 && !work) info = CT_LINALG_NO_MEMORY;
    if (info == 0 && m > 0 && n > 0) LAPACK(geqrf)(&m, &n, a, &lda, tau, work, &lwork, &info);
    if (info == 0) {
        for (lapack_int j = 0; j < n; j++)
            for (lapack_int i = 0; i < rrows; i++)
                r[(size_t)j * rrows + i] = i <= j ? a[(size_t)j * m + i] : 0;
        for (lapack_int j = 0; j < qcols; j++)
            for (lapack_int i = 0; i < m; i++)
                q[(size_t)j * m + i] = j < n ? a[(size_t)j * m + i] : 0;
        if (m > 0) ORGQR(&m, &qcols, &k, q, &lda, tau, work, &lwork, &info);
    }
    free(work);
    free(tau);
    return info;
}
