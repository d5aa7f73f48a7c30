/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The watched set (relay/stream/namespaces.c): literal patterns seeded in order, namespaces
 * met later taken only when they match, indexes never reused, drops (one collection, a whole
 * database) forgotten and revived under the same index, labels per pattern, and a thousand
 * namespaces through the hash.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"
#include "config/namespace.h"
#include "stream/namespaces.h"

static relay_config_t cfg;
static relay_namespaces_t *ns;

static void
load(const char *const *patterns, size_t n)
{
   bson_error_t error;
   relay_config_init_defaults(&cfg);
   cfg.namespaces = bson_malloc0((n + 1) * sizeof(char *));
   for (size_t i = 0; i < n; i++) {
      cfg.namespaces[i] = bson_strdup(patterns[i]);
   }
   cfg.n_namespaces = n;
   cfg.state_database = bson_strdup("state");
   cr_assert(relay_config_resolve_namespaces(&cfg, &error), "%s", error.message);
   ns = relay_namespaces_new(&cfg, &error);
   cr_assert(ns, "%s", error.message);
}

static void
teardown(void)
{
   relay_namespaces_destroy(ns);
   relay_config_destroy(&cfg);
}

TestSuite(namespaces, .fini = teardown);

Test(namespaces, literal_patterns_keep_their_order)
{
   const char *p[] = {"app.orders", "app.contacts", "t_*.c"};
   load(p, 3);
   cr_assert_eq(relay_namespaces_count(ns), 2);
   cr_assert_eq(relay_namespaces_find(ns, "app", "orders"), 0);
   cr_assert_eq(relay_namespaces_find(ns, "app", "contacts"), 1);
   cr_assert_eq(relay_namespaces_find(ns, "t_1", "c"), -1);
}

Test(namespaces, taken_only_when_matching)
{
   const char *p[] = {"app.orders", "t_*.c"};
   load(p, 2);
   cr_assert_eq(relay_namespaces_take(ns, "t_1", "c"), 1);
   cr_assert_eq(relay_namespaces_take(ns, "t_1", "c"), 1);
   cr_assert_eq(relay_namespaces_take(ns, "t_1", "d"), -1);
   cr_assert_eq(relay_namespaces_take(ns, "u_1", "c"), -1);
   cr_assert_eq(relay_namespaces_take(ns, "t_1", NULL), -1);
   cr_assert_eq(relay_namespaces_take(ns, "t_2", "c"), 2);
   relay_ns_t n;
   cr_assert(relay_namespaces_get(ns, 2, &n));
   cr_assert_str_eq(n.db, "t_2");
   cr_assert_str_eq(n.coll, "c");
   cr_assert_eq(n.label, 1, "the second pattern's series");
   cr_assert_not(relay_namespaces_get(ns, 3, &n));
}

Test(namespaces, drops_forget_and_revive)
{
   const char *p[] = {"t_*.*"};
   load(p, 1);
   int a = relay_namespaces_take(ns, "t_1", "a");
   int b = relay_namespaces_take(ns, "t_1", "b");
   int c = relay_namespaces_take(ns, "t_2", "a");
   uint64_t v = relay_namespaces_version(ns);
   cr_assert_eq(relay_namespaces_drop(ns, "t_1", "a"), 1);
   cr_assert_eq(relay_namespaces_drop(ns, "t_1", "a"), 0, "already gone");
   relay_ns_t n;
   relay_namespaces_get(ns, a, &n);
   cr_assert(n.gone);
   cr_assert_gt(relay_namespaces_version(ns), v);
   /* dropDatabase: the rest of t_1, not t_2. */
   cr_assert_eq(relay_namespaces_drop(ns, "t_1", NULL), 1);
   relay_namespaces_get(ns, b, &n);
   cr_assert(n.gone);
   relay_namespaces_get(ns, c, &n);
   cr_assert_not(n.gone);
   /* Made again: the same index, live. */
   cr_assert_eq(relay_namespaces_take(ns, "t_1", "a"), a);
   relay_namespaces_get(ns, a, &n);
   cr_assert_not(n.gone);
   cr_assert_eq(relay_namespaces_count(ns), 3);
}

Test(namespaces, the_relays_own_collections_are_never_taken)
{
   const char *p[] = {"*.*"};
   load(p, 1);
   cr_assert_eq(relay_namespaces_take(ns, "state", "outbox_relay_state"), -1);
   cr_assert_eq(relay_namespaces_take(ns, "admin", "x"), -1);
   cr_assert_eq(relay_namespaces_take(ns, "app", "system.views"), -1);
   cr_assert_eq(relay_namespaces_take(ns, "app", "outbox_relay_state"), 0);
}

Test(namespaces, a_thousand)
{
   const char *p[] = {"tenant_*.*"};
   load(p, 1);
   char db[32], coll[32];
   for (int i = 0; i < 1000; i++) {
      snprintf(db, sizeof db, "tenant_%d", i / 5);
      snprintf(coll, sizeof coll, "c%d", i % 5);
      cr_assert_eq(relay_namespaces_take(ns, db, coll), i);
   }
   for (int i = 999; i >= 0; i--) {
      snprintf(db, sizeof db, "tenant_%d", i / 5);
      snprintf(coll, sizeof coll, "c%d", i % 5);
      cr_assert_eq(relay_namespaces_find(ns, db, coll), i);
      cr_assert_str_eq(relay_namespaces_db(ns, i), db);
      cr_assert_str_eq(relay_namespaces_coll(ns, i), coll);
   }
   cr_assert_eq(relay_namespaces_find(ns, "tenant_1000", "c0"), -1);
}

Test(namespaces, handles_of_gone_namespaces_are_freed)
{
   const char *p[] = {"t_*.*"};
   load(p, 1);
   mongoc_init();
   /* No server is contacted: a collection handle is made offline. */
   mongoc_client_t *client = mongoc_client_new("mongodb://127.0.0.1:1/");
   relay_ns_handles_t h = {0};
   int a = relay_namespaces_take(ns, "t_1", "a");
   int b = relay_namespaces_take(ns, "t_1", "b");
   mongoc_collection_t *ca = relay_ns_handle(&h, ns, client, a);
   cr_assert(ca);
   cr_assert_str_eq(mongoc_collection_get_name(ca), "a");
   cr_assert(relay_ns_handle(&h, ns, client, b) != NULL);
   cr_assert_null(relay_ns_handle(&h, ns, client, 7), "no such namespace");
   relay_namespaces_drop(ns, "t_1", "a");
   relay_ns_handle(&h, ns, client, b);
   cr_assert_null(h.h[a], "the dropped namespace's handle is kept");
   cr_assert(h.h[b] != NULL);
   relay_ns_handles_clear(&h);
   mongoc_client_destroy(client);
   mongoc_cleanup();
}

/* F21: a dropDatabase from the stream may be older than the full sweep it starts (a stream
 * started at a time begins with changes at that time); with literal patterns nothing is
 * listed, so the sweep must take them back, or events written before it are left to nobody. */
Test(namespaces, a_full_sweeps_listing_takes_dropped_literals_back)
{
   const char *p[] = {"app.orders", "app.contacts"};
   bson_error_t error;
   relay_ns_t n;
   load(p, 2);
   cr_assert_eq(relay_namespaces_drop(ns, "app", NULL), 2);
   cr_assert(relay_namespaces_get(ns, 0, &n) && n.gone);
   uint64_t before = relay_namespaces_version(ns);
   cr_assert(relay_namespaces_list(ns, NULL, &error), "%s", error.message);
   for (int i = 0; i < 2; i++) {
      cr_assert(relay_namespaces_get(ns, i, &n) && !n.gone, "%s.%s stayed dropped", n.db, n.coll);
   }
   cr_assert_gt(relay_namespaces_version(ns), before, "handles were not told");
   cr_assert_eq(relay_namespaces_count(ns), 2);
}
