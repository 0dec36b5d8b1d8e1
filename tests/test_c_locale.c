/* Numbers are read and printed the C way ("1.5") while the program runs in a locale whose
 * decimal separator is a comma: CSV cells, CT_MEMORY_LIMIT sizes, printed tensors and module
 * descriptions. The locale (de_DE.UTF-8) is made with localedef under the tests' build
 * folder; where the system cannot make it (no localedef, or no Debian `locales` package),
 * each test is skipped, saying so. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/device_impl.h"
#include "ct_ref.h"
#include "mem/pool_impl.h"

#define LOCALE_DIR "c_locale_test"

/* Switch this program to de_DE.UTF-8, made on first use; false (the test skipped) when it
 * cannot be made or has no decimal comma. */
static bool comma_locale(void) {
    static int state; /* 0: not tried, 1: ready, -1: unavailable */
    if (state == 0) {
        state = -1;
        if (system("test -f " LOCALE_DIR "/de_DE.UTF-8/LC_NUMERIC || "
                   "{ mkdir -p " LOCALE_DIR " && localedef -i de_DE -f UTF-8 " LOCALE_DIR
                   "/de_DE.UTF-8; } >/dev/null 2>&1") == 0) {
            setenv("LOCPATH", LOCALE_DIR, 1);
            if (setlocale(LC_ALL, "de_DE.UTF-8") && localeconv()->decimal_point[0] == ',')
                state = 1;
        }
    }
    if (state < 0) {
        ct_test_skip("no locale with a decimal comma here: localedef -i de_DE failed (Debian's "
                     "locales package provides it)");
        return false;
    }
    return setlocale(LC_ALL, "de_DE.UTF-8") != NULL;
}

TEST(test_c_locale_csv_cells) {
    if (!comma_locale()) return;
    const char *path = "c_locale_test.csv";
    FILE *f = fopen(path, "w");
    CHECK_NOT_NULL(f);
    fputs("1.5,2.25,0\n-3e-1, 4 ,1\n", f);
    fclose(f);
    ct_tensor *x = NULL, *y = NULL;
    ct_status status = ct_read_csv(path, NULL, &x, &y);
    setlocale(LC_ALL, "C");
    remove(path);
    CHECK_OK(status);
    CHECK_TENSOR(x, ((double[]){1.5, 2.25, -0.3, 4}));
    CHECK_TENSOR(y, ((double[]){0, 1}));
    ct_release(x);
    ct_release(y);
}

TEST(test_c_locale_memory_limit_sizes) {
    if (!comma_locale()) return;
    size_t limits[CT_DEVICE_SLOTS] = {0};
    ct_status status = ct__parse_memory_limits("cpu=1.5MiB", limits, CT_DEVICE_SLOTS);
    setlocale(LC_ALL, "C");
    CHECK_OK(status);
    CHECK(limits[ct__device_slot(CT_CPU)] == (size_t)3 << 19);
}

TEST(test_c_locale_printed_numbers) {
    if (!comma_locale()) return;
    ct_tensor *x = ct_full(1, (int64_t[]){2}, 1.5, CT_F32, CT_CPU);
    ct_tensor *big = ct_full(1, (int64_t[]){1}, 2.5e12, CT_F64, CT_CPU);
    ct_module *dropout = ct_nn_dropout(0.5);
    char *text = ct_format(x), *sci = ct_format(big), description[64];
    if (dropout) ct_module_describe(dropout, description, sizeof description);
    setlocale(LC_ALL, "C");
    CHECK(x && big && dropout && text && sci);
    CHECK(strstr(text, "[1.5000, 1.5000]") != NULL);
    CHECK(strstr(sci, "2.5000e+12") != NULL);
    CHECK(strstr(description, "Dropout(p=0.5)") != NULL);
    ct_free(text);
    ct_free(sci);
    ct_module_free(dropout);
    ct_release(x);
    ct_release(big);
}
