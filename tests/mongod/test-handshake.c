/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The handshake: libmongoc must see a replica-set primary with directConnection=true and
 * with replicaSet=rs0 (hosts/primary/me must equal the address it used).
 */
#include <criterion/criterion.h>

#include "test-util.h"

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
   cr_assert(!bson_has_field(&reply, "topologyVersion"));
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
