/* Numbers the library reads from files and the environment, and numbers it prints, are
 * written the C way ("1.5") whatever locale the program has set: after
 * setlocale(LC_NUMERIC, "de_DE.UTF-8"), strtod and printf would read and write "1,5", and a
 * CSV file or a printed tensor would depend on the user's language (NumPy's and PyTorch's do
 * not). */
#ifndef CT_C_LOCALE_IMPL_H
#define CT_C_LOCALE_IMPL_H

#include <stddef.h>

#include "core/error_impl.h"

/* strtod in the C locale. */
double ct__strtod_c(const char *text, char **end);

/* snprintf in the C locale. */
int ct__snprintf_c(char *buf, size_t size, const char *fmt, ...) CT_PRINTF_(3, 4);

#endif
