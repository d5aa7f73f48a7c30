/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Bad input on the wire: each malformed message gets an error reply or a closed
 * connection, and the server keeps serving everyone else.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/test-util.h"
#include "net/wire.h"

static int
connect_raw(void)
{
   mongoc_uri_t *uri = mongoc_uri_new(getenv("OUTBOX_TEST_MONGODB_URI"));
   cr_assert_not_null(uri);
   const mongoc_host_list_t *host = mongoc_uri_get_hosts(uri);
   struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(host->port)};
   inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
   mongoc_uri_destroy(uri);
   return fd;
}

static void
put32(uint8_t *p, int32_t v)
{
   uint32_t u = (uint32_t)v;
   for (int i = 0; i < 4; i++) {
      p[i] = (uint8_t)(u >> (8 * i));
   }
}

/* Sends `len` bytes, then waits for a reply or a close. Returns the reply's opCode, 0 if the
 * connection was closed, -1 if neither happened within 2 s. */
static int
exchange(const uint8_t *msg, size_t len)
{
   int fd = connect_raw();
   send(fd, msg, len, MSG_NOSIGNAL);
   struct pollfd p = {.fd = fd, .events = POLLIN};
   int result = -1;
   if (poll(&p, 1, 2000) == 1) {
      uint8_t header[16];
      ssize_t n = recv(fd, header, sizeof header, MSG_WAITALL);
      result =
         n == 16 ? (int)(header[12] | header[13] << 8 | header[14] << 16 | header[15] << 24) : 0;
   }
   close(fd);
   return result;
}

static void
assert_server_alive(void)
{
   mongoc_client_t *client = md_test_client(NULL, false);
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
   md_test_admin(client, cmd, NULL);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

/* An OP_MSG with the given flags and body bytes. */
static size_t
op_msg(uint8_t *buf, uint32_t flags, const uint8_t *body, size_t body_len)
{
   size_t len = 16 + 4 + 1 + body_len;
   put32(buf, (int32_t)len);
   put32(buf + 4, 1);
   put32(buf + 8, 0);
   put32(buf + 12, 2013);
   put32(buf + 16, (int32_t)flags);
   buf[20] = 0;
   memcpy(buf + 21, body, body_len);
   return len;
}

Test(wire, valid_op_msg_gets_a_reply)
{
   uint8_t buf[256];
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len = op_msg(buf, 0, bson_get_data(cmd), cmd->len);
   cr_assert_eq(exchange(buf, len), 2013);
   bson_destroy(cmd);
}

Test(wire, bad_inputs_never_crash)
{
   uint8_t buf[256];
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len = op_msg(buf, 0, bson_get_data(cmd), cmd->len);

   uint8_t bad[256];
   memcpy(bad, buf, len);
   put32(bad, 8); /* length below the header size */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   put32(bad, 49000000); /* above maxMessageSizeBytes */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   put32(bad + 21, 200); /* BSON length beyond the message */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   bad[21 + 4] = 0x7f; /* unknown BSON element type */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   put32(bad + 16, 1 << 5); /* an unknown required flag bit: 223 and close */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   put32(bad + 12, 9999); /* unknown opcode */
   cr_assert_neq(exchange(bad, len), -1);

   memcpy(bad, buf, len);
   bad[20] = 7; /* unknown section kind */
   cr_assert_neq(exchange(bad, len), -1);

   bson_t *no_db = BCON_NEW("ping", BCON_INT32(1));
   len = op_msg(bad, 0, bson_get_data(no_db), no_db->len);
   cr_assert_eq(exchange(bad, len), 2013, "a missing $db gets an error reply");
   bson_destroy(no_db);

   /* Invalid UTF-8 in a string. */
   bson_t *utf = BCON_NEW("ping", BCON_UTF8("xx"), "$db", BCON_UTF8("admin"));
   len = op_msg(bad, 0, bson_get_data(utf), utf->len);
   uint8_t *x = memmem(bad, len, "xx", 2);
   x[0] = 0xff;
   cr_assert_neq(exchange(bad, len), -1);
   bson_destroy(utf);

   bson_destroy(cmd);
   assert_server_alive();
}

Test(wire, truncated_message_then_close)
{
   uint8_t buf[256];
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len = op_msg(buf, 0, bson_get_data(cmd), cmd->len);
   int fd = connect_raw();
   send(fd, buf, len / 2, MSG_NOSIGNAL);
   close(fd);
   bson_destroy(cmd);
   assert_server_alive();
}

Test(wire, more_to_come_gets_no_reply)
{
   uint8_t buf[256];
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len = op_msg(buf, 2, bson_get_data(cmd), cmd->len);
   cr_assert_eq(exchange(buf, len), -1);
   bson_destroy(cmd);
}

Test(wire, checksum_is_verified)
{
   uint8_t buf[256];
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1), "$db", BCON_UTF8("admin"));
   size_t len = op_msg(buf, 1, bson_get_data(cmd), cmd->len);
   put32(buf, (int32_t)(len + 4));
   put32(buf + len, (int32_t)md_crc32c(buf, len));
   cr_assert_eq(exchange(buf, len + 4), 2013, "a correct CRC-32C is accepted");
   buf[len] ^= 1;
   cr_assert_eq(exchange(buf, len + 4), 0, "a wrong one closes the connection");
   bson_destroy(cmd);
}
