/* The library's version string. */
#include "ctensor/ctensor.h"

#define CT_STR2_(x) #x
#define CT_STR_(x) CT_STR2_(x)

const char *ct_version(void) {
    return CT_STR_(CT_VERSION_MAJOR) "." CT_STR_(CT_VERSION_MINOR) "." CT_STR_(CT_VERSION_PATCH);
}
