/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Symbol visibility and C++ linkage for liboutbox's public API. Macros only: no state.
 */
#ifndef OUTBOX_MACROS_H
#define OUTBOX_MACROS_H

/* The library is built with -fvisibility=hidden; only OUTBOX_API symbols are exported. */
#if defined(OUTBOX_COMPILATION) && defined(__GNUC__)
#define OUTBOX_API __attribute__((visibility("default")))
#else
#define OUTBOX_API
#endif

#ifdef __cplusplus
#define OUTBOX_BEGIN_DECLS extern "C" {
#define OUTBOX_END_DECLS }
#else
#define OUTBOX_BEGIN_DECLS
#define OUTBOX_END_DECLS
#endif

#endif /* OUTBOX_MACROS_H */
