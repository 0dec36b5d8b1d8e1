/* The C locale for reading and printing numbers (c_locale_impl.h): one locale object, made on
 * first use, read with strtod_l and made the thread's locale only around a formatting call. */
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/c_locale_impl.h"

static pthread_once_t made = PTHREAD_ONCE_INIT;
static locale_t c_locale; /* (locale_t)0 when it could not be made: the caller's locale then */

static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

static locale_t the_c_locale(void) {
    pthread_once(&made, make_c_locale);
    return c_locale;
}

double ct__strtod_c(const char *text, char **end) {
    locale_t c = the_c_locale();
    return c ? strtod_l(text, end, c) : strtod(text, end);
}

int ct__snprintf_c(char *buf, size_t size, const char *fmt, ...) {
    locale_t c = the_c_locale();
    locale_t previous = c ? uselocale(c) : (locale_t)0;
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(buf, size, fmt, args);
    va_end(args);
    if (previous) uselocale(previous);
    return n;
}
