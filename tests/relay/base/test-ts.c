/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Cluster times (relay/base/ts.c): the time a resume token's _data begins with, in the form
 * MongoDB 6.0 writes (0x82 and a big-endian Timestamp: resume_token.cpp, key_string.cpp), and
 * tokens of other forms refused rather than misread.
 */
#include <criterion/criterion.h>

#include "base/ts.h"

Test(ts, a_tokens_cluster_time_is_read)
{
   relay_ts_t ts = {0, 0};
   /* A high-water mark seen through test-mongod's mongos (FINDINGS.md F18). */
   cr_assert(relay_ts_from_token_data("826B149AE400000002FFFFFFFFFFFF", &ts));
   cr_assert_eq(ts.t, 0x6B149AE4u);
   cr_assert_eq(ts.i, 2u);
   /* An event token of a real 6.0 server, lower-case hex accepted too. */
   cr_assert(relay_ts_from_token_data("82656f3b1e000000012b022c0100296e5a1004", &ts));
   cr_assert_eq(ts.t, 0x656F3B1Eu);
   cr_assert_eq(ts.i, 1u);
}

Test(ts, tokens_of_other_forms_are_refused)
{
   relay_ts_t ts = {7, 7};
   cr_assert(!relay_ts_from_token_data(NULL, &ts));
   cr_assert(!relay_ts_from_token_data("", &ts));
   cr_assert(!relay_ts_from_token_data("82", &ts));
   cr_assert(!relay_ts_from_token_data("826B149AE4000000", &ts), "a cut-short time was read");
   cr_assert(!relay_ts_from_token_data("816B149AE400000002", &ts), "not a Timestamp");
   cr_assert(!relay_ts_from_token_data("826B149AE40000000G", &ts), "not hex");
   cr_assert_eq(ts.t, 7u, "a refused token changed the time");
   cr_assert_eq(ts.i, 7u);
   cr_assert(relay_ts_from_token_data("826B149AE400000002", &ts), "the time alone is a token");
}

Test(ts, times_compare_seconds_first)
{
   cr_assert_eq(relay_ts_cmp((relay_ts_t){1, 9}, (relay_ts_t){2, 0}), -1);
   cr_assert_eq(relay_ts_cmp((relay_ts_t){2, 1}, (relay_ts_t){2, 0}), 1);
   cr_assert_eq(relay_ts_cmp((relay_ts_t){2, 1}, (relay_ts_t){2, 1}), 0);
}
