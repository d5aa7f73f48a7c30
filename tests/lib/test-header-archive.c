/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox/archive.h: outbox/outbox.h declares it, and it compiles alone
 * (header-archive-only.c includes nothing else).
 */
#include <outbox/outbox.h>

#include <criterion/criterion.h>

/* From header-archive-only.c. */
outbox_archive_cursor_t *header_archive_only_find(void);
int64_t header_archive_only_validator_keys(void);

Test(headers, outbox_h_declares_the_archive)
{
   bson_t validator;
   bson_iter_t it;
   outbox_archive_schema(&validator);
   cr_assert(bson_iter_init(&it, &validator) &&
             bson_iter_find_descendant(&it, "$jsonSchema.title", &it));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "outbox archive contract");
   bson_destroy(&validator);
   outbox_archive_cursor_destroy(NULL);
}

Test(headers, archive_h_alone)
{
   cr_assert_null(header_archive_only_find());
   cr_assert_eq(header_archive_only_validator_keys(), 1);
}
