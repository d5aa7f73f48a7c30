/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's version, short and long (--version). Static strings; thread-safe.
 */
#ifndef RELAY_VERSION_H
#define RELAY_VERSION_H

/* The relay's version ("0.1.0"), a static string. */
const char *relay_version(void);

/* Versions of the relay and the libraries it was built with and runs against, one line
 * each, for --version. A static string. */
const char *relay_version_long(void);

#endif /* RELAY_VERSION_H */
