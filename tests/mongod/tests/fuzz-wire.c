/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * libFuzzer target: a message as it arrives on a connection, parsed by wire.c and, when it
 * parses, run through the command dispatcher against an in-memory server (no sockets).
 * Build and run (clang only):
 *   CC=clang meson setup build-fuzz -Dfuzzing=true -Db_sanitize=address,undefined \
 *        -Db_lundef=false
 *   meson compile -C build-fuzz tests/mongod/fuzz-wire
 *   mkdir -p /tmp/fuzz-corpus && build-fuzz/tests/mongod/fuzz-wire -max_total_time=300 \
 *        -max_len=4096 /tmp/fuzz-corpus tests/mongod/tests/fuzz-seeds
 * getMore and configureFailPoint are not executed: they may wait or sleep by design.
 */
#include <stdlib.h>
#include <string.h>

#include "commands/commands.h"
#include "net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static md_server_t *srv;
static md_conn_t conn;

static void
cleanup(void)
{
   md_server_destroy(srv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   if (!srv) {
      md_server_opts_t opts = {.bind = "127.0.0.1", .oplog_size = 64, .max_connections = 1};
      srv = md_server_new(&opts);
      conn.srv = srv;
      conn.id = 1;
      atexit(cleanup);
   }
   md_request_t req;
   bson_error_t error;
   if (size < 16) {
      return 0;
   }
   /* The connection loop only passes messages whose header length matches. */
   uint8_t *msg = malloc(size);
   memcpy(msg, data, size);
   msg[0] = (uint8_t)size;
   msg[1] = (uint8_t)(size >> 8);
   msg[2] = (uint8_t)(size >> 16);
   msg[3] = (uint8_t)(size >> 24);
   if (md_wire_parse(msg, size, &req, &error) == MD_WIRE_OK) {
      bson_iter_t it;
      const char *name =
         bson_iter_init(&it, &req.cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "";
      if (strcmp(name, "getMore") != 0 && strcmp(name, "configureFailPoint") != 0) {
         bson_t reply;
         md_command_run(&conn, &req.cmd, &reply);
         bson_destroy(&reply);
      }
      md_request_destroy(&req);
   }
   free(msg);
   return 0;
}
