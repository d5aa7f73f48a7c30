/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <outbox/outbox.h>

Test(version, matches_header)
{
   cr_assert_str_eq(outbox_get_version(), OUTBOX_VERSION_STRING);
   cr_assert_gt(strlen(outbox_get_version()), 4);
}
