/* ctensor — the export macro.
 *
 * The library is built with -fvisibility=hidden, so the functions marked CT_API are
 * exactly the public API; everything else stays internal to the shared object. */
#ifndef CTENSOR_EXPORT_H
#define CTENSOR_EXPORT_H

#if defined(_WIN32)
#define CT_API __declspec(dllexport)
#else
#define CT_API __attribute__((visibility("default")))
#endif

#endif
