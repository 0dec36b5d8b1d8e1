/* The global random stream's internals shared by ops that draw from it (ct_rand, ct_randn,
 * ct_dropout): taking blocks of counters. */
#ifndef CT_RANDOM_IMPL_H
#define CT_RANDOM_IMPL_H

#include <stdint.h>

/* Take `blocks` consecutive Philox blocks of the global stream (random.h): the stream's
 * seed and the first block's counter. Atomic, so concurrent draws never share blocks. */
void ct__random_take(uint64_t blocks, uint64_t *seed, uint64_t *offset);

#endif
