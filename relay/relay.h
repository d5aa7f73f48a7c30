/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#ifndef RELAY_H
#define RELAY_H

const char *
relay_version(void);

#endif /* RELAY_H */
