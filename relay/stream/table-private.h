/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What the table's own files (table.c, table-events.c, table-pos.c) share and nothing else
 * includes. Main thread only, like the table.
 */
#ifndef RELAY_STREAM_TABLE_PRIVATE_H
#define RELAY_STREAM_TABLE_PRIVATE_H

#include "stream/table.h"

/* Frees an item (its event too); it must already be unlinked and uncounted. */
void relay_table_item_free(relay_item_t *it);

#endif /* RELAY_STREAM_TABLE_PRIVATE_H */
