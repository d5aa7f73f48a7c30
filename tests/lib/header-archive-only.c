/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Includes only outbox/archive.h, so the build fails if that header stops being
 * self-sufficient (see test-header-archive.c).
 */
#include <outbox/archive.h>

outbox_archive_cursor_t *header_archive_only_find(void);
int64_t header_archive_only_validator_keys(void);

/* A NULL archive is refused without I/O: the declarations link and behave. */
outbox_archive_cursor_t *
header_archive_only_find(void)
{
   bson_error_t error;
   return outbox_archive_find(NULL, NULL, &error);
}

int64_t
header_archive_only_validator_keys(void)
{
   bson_t validator;
   int64_t n;
   outbox_archive_schema(&validator);
   n = bson_count_keys(&validator);
   bson_destroy(&validator);
   return n;
}
