/* UTF-8 validation (RFC 3629): the strings of state dicts and safetensors headers must be
 * UTF-8, since the header is JSON that other readers decode strictly. */
#ifndef CT_UTF8_IMPL_H
#define CT_UTF8_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at s (at most n bytes available), or 0 when it is
 * malformed: a stray continuation byte, a truncated sequence, an overlong form, a surrogate
 * (U+D800..U+DFFF) or a code point above U+10FFFF. */
static inline size_t ct__utf8_sequence(const unsigned char *s, size_t n) {
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; /* overlong below U+0800 */
        if (c == 0xed) hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90; /* overlong below U+10000 */
        if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return len;
}

/* Whether the NUL-terminated string s is valid UTF-8. */
static inline bool ct__utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (p[n]) n++;
    for (size_t i = 0; i < n;) {
        size_t len = ct__utf8_sequence(p + i, n - i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

#endif
