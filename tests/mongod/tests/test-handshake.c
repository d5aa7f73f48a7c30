/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The handshake: libmongoc must see a replica-set primary with directConnection=true and
 * with replicaSet=rs0 (hosts/primary/me must equal the address it used).
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tests/test-util.h"

static void
ping_and_write(bool replica_set)
{
   mongoc_client_t *client = md_test_client("handshake", replica_set);
   bson_error_t error;
   bson_t reply;
   bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
   bool ok = mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &error);
   cr_assert(ok, "ping: %s", error.message);
   bson_destroy(&reply);
   char *name = md_test_name("hs");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *doc = BCON_NEW("x", BCON_INT32(1));
   /* A write needs a writable primary: server selection fails otherwise. */
   ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
   cr_assert(ok, "insert: %s", error.message);
   bson_destroy(doc);
   bson_destroy(ping);
   mongoc_collection_destroy(coll);
   bson_free(name);
   mongoc_client_destroy(client);
}

Test(handshake, direct_connection)
{
   ping_and_write(false);
}

Test(handshake, replica_set_rs0)
{
   ping_and_write(true);
}

Test(handshake, hello_field_types)
{
   mongoc_client_t *client = md_test_client(NULL, false);
   bson_t reply;
   bson_iter_t it;
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   md_test_admin(client, cmd, &reply);
   cr_assert(bson_iter_init_find(&it, &reply, "maxWireVersion") && BSON_ITER_HOLDS_INT32(&it));
   cr_assert_geq(bson_iter_int32(&it), 17);
   cr_assert(bson_iter_init_find(&it, &reply, "maxBsonObjectSize") && BSON_ITER_HOLDS_INT32(&it));
   cr_assert(bson_iter_init_find(&it, &reply, "setName") && BSON_ITER_HOLDS_UTF8(&it));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "rs0");
   cr_assert(bson_iter_init_find(&it, &reply, "isWritablePrimary") && bson_iter_as_bool(&it));
   cr_assert(bson_iter_init_find(&it, &reply, "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it));
   cr_assert(bson_iter_init_find(&it, &reply, "operationTime") && BSON_ITER_HOLDS_TIMESTAMP(&it));
   /* MongoDB 6.0 always sends topologyVersion (drivers then stream their monitoring). */
   cr_assert(bson_iter_init_find(&it, &reply, "topologyVersion") && BSON_ITER_HOLDS_DOCUMENT(&it));
   bson_iter_t tv;
   cr_assert(bson_iter_init(&it, &reply) &&
             bson_iter_find_descendant(&it, "topologyVersion.processId", &tv) &&
             BSON_ITER_HOLDS_OID(&tv));
   cr_assert(bson_iter_init(&it, &reply) &&
             bson_iter_find_descendant(&it, "topologyVersion.counter", &tv) &&
             BSON_ITER_HOLDS_INT64(&tv));
   cr_assert(!bson_has_field(&reply, "compression"));
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

Test(handshake, unknown_command_is_59)
{
   mongoc_client_t *client = md_test_client(NULL, false);
   bson_error_t error;
   bson_t reply;
   bson_t *cmd = BCON_NEW("noSuchCommandHere", BCON_INT32(1));
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error);
   cr_assert(!ok);
   cr_assert_eq(error.code, 59);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

Test(handshake, build_info_is_6_0)
{
   mongoc_client_t *client = md_test_client(NULL, false);
   bson_t reply;
   bson_iter_t it;
   bson_t *cmd = BCON_NEW("buildInfo", BCON_INT32(1));
   md_test_admin(client, cmd, &reply);
   cr_assert(bson_iter_init_find(&it, &reply, "version") && BSON_ITER_HOLDS_UTF8(&it));
   cr_assert_eq(strncmp(bson_iter_utf8(&it, NULL), "6.0.", 4), 0);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

static atomic_int awaited_ok, heartbeat_failed;

static void
on_heartbeat_ok(const mongoc_apm_server_heartbeat_succeeded_t *event)
{
   if (mongoc_apm_server_heartbeat_succeeded_get_awaited(event)) {
      atomic_fetch_add(&awaited_ok, 1);
   }
}

static void
on_heartbeat_failed(const mongoc_apm_server_heartbeat_failed_t *event)
{
   (void)event;
   atomic_fetch_add(&heartbeat_failed, 1);
}

/* With a topologyVersion in hello, a pooled libmongoc client monitors with the awaitable
 * hello in its streaming (exhaust) form: heartbeats keep arriving every maxAwaitTimeMS
 * (heartbeatFrequencyMS) without failing, commands keep working, and the pool shuts down. */
Test(handshake, pooled_client_streams_awaitable_hello, .timeout = 60)
{
   mongoc_uri_t *uri = mongoc_uri_new(getenv("OUTBOX_TEST_MONGODB_URI"));
   cr_assert_not_null(uri);
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 500);
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, 2);
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_server_heartbeat_succeeded_cb(cbs, on_heartbeat_ok);
   mongoc_apm_set_server_heartbeat_failed_cb(cbs, on_heartbeat_failed);
   mongoc_client_pool_set_apm_callbacks(pool, cbs, NULL);
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
   int64_t deadline = bson_get_monotonic_time() + 30 * 1000 * 1000;
   while (atomic_load(&awaited_ok) < 3 && bson_get_monotonic_time() < deadline) {
      bson_error_t error;
      cr_assert(mongoc_client_command_simple(client, "admin", ping, NULL, NULL, &error), "%s",
                error.message);
      usleep(100 * 1000);
   }
   cr_assert_geq(atomic_load(&awaited_ok), 3, "awaited heartbeats: %d", atomic_load(&awaited_ok));
   cr_assert_eq(atomic_load(&heartbeat_failed), 0);
   bson_destroy(ping);
   mongoc_client_pool_push(pool, client);
   mongoc_client_pool_destroy(pool);
   mongoc_apm_callbacks_destroy(cbs);
   mongoc_uri_destroy(uri);
}
