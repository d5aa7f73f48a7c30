/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * MongoDB wire protocol framing: parses OP_MSG and OP_QUERY requests into one command
 * document and builds OP_MSG / OP_REPLY answers. Pure functions, strictly bounds-checked:
 * every length is checked against the bytes actually present, so malformed input yields an
 * error, never an out-of-bounds read. Also the entry point of the fuzz target.
 */
#ifndef MD_WIRE_H
#define MD_WIRE_H

#include <bson/bson.h>
#include <stddef.h>
#include <stdint.h>

#define MD_OP_REPLY 1
#define MD_OP_QUERY 2004
#define MD_OP_COMPRESSED 2012
#define MD_OP_MSG 2013

#define MD_MAX_BSON_SIZE 16777216
#define MD_MAX_MESSAGE_SIZE 48000000
/* Commands may exceed the document limit by a little (the command wrapper around a 16 MiB
 * document), as in mongod. */
#define MD_MAX_COMMAND_SIZE (MD_MAX_BSON_SIZE + 16 * 1024)

typedef struct {
   int32_t request_id;
   int32_t op_code;
   bool more_to_come;    /* OP_MSG bit 1: the client wants no reply */
   bool exhaust_allowed; /* OP_MSG bit 16: the client reads a stream of replies */
   bson_t cmd;           /* the command, kind-1 sections folded in, `$db` present */
} md_request_t;

typedef enum {
   MD_WIRE_OK = 0,
   MD_WIRE_ERROR_REPLY, /* answer with the error in *error; close if md_wire_error_is_fatal */
   MD_WIRE_ERROR_CLOSE, /* close without an answer */
} md_wire_result_t;

/* Reads the header of a message: returns false if `len` is not a plausible length. */
bool md_wire_check_length(int32_t len);

/* Whether a parse error must close the connection after its answer, as mongod's
 * ConnectionFatalMessageParseError codes (223, 233, 288) do. Other parse errors leave a
 * well-framed stream in sync, so mongod answers them and keeps serving the connection. */
bool md_wire_error_is_fatal(int32_t code);

/* Parses one whole message (`len` bytes, header included). On MD_WIRE_OK `req->cmd` must be
 * freed with md_request_destroy. On MD_WIRE_ERROR_REPLY req->request_id/op_code are set so an
 * error answer can be built. */
md_wire_result_t md_wire_parse(const uint8_t *msg, size_t len, md_request_t *req,
                               bson_error_t *error);

void md_request_destroy(md_request_t *req);

/* Builds the answer to `req` (OP_REPLY for OP_QUERY, else OP_MSG) carrying `doc`. Returns a
 * buffer of *len bytes that the caller frees with bson_free. */
uint8_t *md_wire_build_reply(int32_t op_code, int32_t request_id, int32_t response_to,
                             const bson_t *doc, size_t *len);

/* Sets moreToCome in a reply built by md_wire_build_reply for OP_MSG: another reply to the
 * same request follows (the exhaust / streaming form of a command). */
void md_wire_set_more_to_come(uint8_t *reply);

uint32_t md_crc32c(const uint8_t *data, size_t len);

#endif
