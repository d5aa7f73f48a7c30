/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Wire protocol framing: parsing OP_MSG (flags, kind 0/1 sections, checksum) and OP_QUERY
 * into one command document, building OP_MSG and OP_REPLY answers. Pure, bounds-checked
 * functions (the fuzz target's entry point); no server state.
 */
#include "net/wire.h"

#include <stdio.h>
#include <string.h>

#include "engine/engine.h"

static int32_t
rd32(const uint8_t *p)
{
   uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
   return (int32_t)v;
}

static void
wr32(uint8_t *p, int32_t v)
{
   uint32_t u = (uint32_t)v;
   p[0] = (uint8_t)u;
   p[1] = (uint8_t)(u >> 8);
   p[2] = (uint8_t)(u >> 16);
   p[3] = (uint8_t)(u >> 24);
}

uint32_t
md_crc32c(const uint8_t *data, size_t len)
{
   static uint32_t table[256];
   static bool ready; /* benign race: every thread computes the same table */
   if (!ready) {
      for (uint32_t i = 0; i < 256; i++) {
         uint32_t c = i;
         for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
         }
         table[i] = c;
      }
      ready = true;
   }
   uint32_t crc = 0xFFFFFFFFu;
   for (size_t i = 0; i < len; i++) {
      crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
   }
   return crc ^ 0xFFFFFFFFu;
}

bool
md_wire_check_length(int32_t len)
{
   return len >= 16 + 5 && len <= MD_MAX_MESSAGE_SIZE;
}

bool
md_wire_error_is_fatal(int32_t code)
{
   /* mongod's ConnectionFatalMessageParseError category. */
   return code == 223 || code == 233 || code == 288;
}

/* True if the @len bytes at @s (a key: no NUL inside) are valid UTF-8, as libbson's
 * bson_utf8_validate(s, len, false) says. Keys are nearly always ASCII: this checks eight
 * bytes at a time for a high bit and hands only the rest of a key that has one to libbson,
 * which decodes byte by byte. Every byte before the first block with a high bit is a whole
 * one-byte character, so libbson starts at a character boundary. */
static bool
key_utf8_ok(const char *s, size_t len)
{
   size_t i = 0;
   for (; i + 8 <= len; i += 8) {
      uint64_t block;
      memcpy(&block, s + i, 8);
      if (block & UINT64_C(0x8080808080808080)) {
         return bson_utf8_validate(s + i, len - i, false);
      }
   }
   for (; i < len; i++) {
      if ((unsigned char)s[i] & 0x80) {
         return bson_utf8_validate(s + i, len - i, false);
      }
   }
   return true;
}

/* Checks a document in one walk: libbson's element framing (bson_iter_next), the framing of
 * every nested document (libbson 1.23's bson_validate does not notice a nested document
 * whose terminator is wrong, and later code trusts subdocuments), UTF-8 keys, and a bound on
 * the nesting depth, so recursive code in the engine cannot exhaust the stack. String values
 * are not checked for UTF-8, as mongod does not check them (validateBSON's default mode) and
 * as this server never did: libbson 1.23's bson_validate stops silently at an invalid string
 * value, so only keys were ever refused; checking every string byte by byte was half of this
 * server's work per statement. @base is the document's offset in the outermost one: on
 * failure *@offset is where the bad element starts there. */
static bool
check_doc(const uint8_t *data, size_t len, int depth, size_t base, size_t *offset)
{
   bson_t b;
   bson_iter_t it;
   *offset = base;
   if (depth > 150 || !bson_init_static(&b, data, len) || !bson_iter_init(&it, &b)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      uint32_t n = 0;
      const uint8_t *sub = NULL;
      *offset = base + it.off;
      if (!key_utf8_ok(bson_iter_key(&it), bson_iter_key_len(&it))) {
         return false;
      }
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_document(&it, &n, &sub);
      } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_iter_array(&it, &n, &sub);
      } else if (BSON_ITER_HOLDS_CODEWSCOPE(&it)) {
         bson_iter_codewscope(&it, NULL, &n, &sub);
      }
      if (sub && !check_doc(sub, n, depth + 1, base + (size_t)(sub - data), offset)) {
         return false;
      }
   }
   if (it.err_off) {
      *offset = base + it.err_off;
   }
   return it.err_off == 0;
}

/* mongod's BSONObj size assertion (10334 BSONObjectTooLarge), naming the first element. */
static void
too_large(const uint8_t *p, int32_t len, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   char first[128] = "";
   if (bson_init_static(&doc, p, (size_t)len) && bson_iter_init(&it, &doc) && bson_iter_next(&it)) {
      if (BSON_ITER_HOLDS_UTF8(&it)) {
         snprintf(first, sizeof first, " First element: %s: \"%.60s\"", bson_iter_key(&it),
                  bson_iter_utf8(&it, NULL));
      } else if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it)) {
         snprintf(first, sizeof first, " First element: %s: %lld", bson_iter_key(&it),
                  (long long)bson_iter_as_int64(&it));
      }
   }
   tm_error_set(error, 10334,
                "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and "
                "%d(%dMB)%s",
                (int)len, (unsigned)len, MD_MAX_COMMAND_SIZE, MD_MAX_COMMAND_SIZE / (1024 * 1024),
                first);
}

/* Validates one BSON document at p (at most `avail` bytes) and returns its length, or 0.
 * Documents may be up to 16 MiB + 16 KiB (mongod's internal limit); a larger one that the
 * message holds whole is 10334, a connection-preserving error like mongod's. */
static uint32_t
bson_at(const uint8_t *p, size_t avail, bson_t *out, bson_error_t *error)
{
   if (avail < 5) {
      tm_error_set(error, 2, "truncated BSON document");
      return 0;
   }
   int32_t len = rd32(p);
   if (len > MD_MAX_COMMAND_SIZE && (size_t)len <= avail) {
      too_large(p, len, error);
      return 0;
   }
   if (len < 5 || (size_t)len > avail) {
      tm_error_set(error, 2, "BSON document length %d is invalid", (int)len);
      return 0;
   }
   size_t offset = 0;
   if (!bson_init_static(out, p, (size_t)len) || !check_doc(p, (size_t)len, 0, 0, &offset)) {
      tm_error_set(error, 22, "invalid BSON in message (offset %zu)", offset);
      return 0;
   }
   return (uint32_t)len;
}

static bool
fold_sequence(bson_t *cmd, const uint8_t *p, size_t size, bson_error_t *error)
{
   /* p points after the size field; the identifier is a cstring within the section. */
   const uint8_t *nul = memchr(p, '\0', size);
   if (!nul) {
      return tm_error_set(error, 2, "document sequence identifier is not terminated");
   }
   const char *ident = (const char *)p;
   if (!bson_utf8_validate(ident, (size_t)(nul - p), false)) {
      return tm_error_set(error, 2, "document sequence identifier is not valid UTF-8");
   }
   bson_iter_t it;
   if (bson_iter_init_find(&it, cmd, ident)) {
      return tm_error_set(error, 40413, "Duplicate field '%s' in OP_MSG", ident);
   }
   size_t pos = (size_t)(nul - p) + 1;
   bson_t arr;
   bson_append_array_begin(cmd, ident, -1, &arr);
   for (uint32_t i = 0; pos < size; i++) {
      bson_t doc;
      uint32_t len = bson_at(p + pos, size - pos, &doc, error);
      if (!len) {
         bson_append_array_end(cmd, &arr);
         return false;
      }
      char key[16];
      const char *k;
      bson_uint32_to_string(i, &k, key, sizeof key);
      bson_append_document(&arr, k, -1, &doc);
      pos += len;
   }
   bson_append_array_end(cmd, &arr);
   return true;
}

/* Reads the sections after the flags: the kind-0 body into *body, the kind-1 document
 * sequences folded into `extra` as arrays. */
static bool
read_sections(const uint8_t *p, size_t len, bson_t *body, bson_t *extra, bson_error_t *error)
{
   bool have_body = false;
   size_t pos = 0;
   while (pos < len) {
      uint8_t kind = p[pos++];
      if (kind == 0) {
         if (have_body) {
            return tm_error_set(error, 40430, "Multiple body sections in OP_MSG");
         }
         uint32_t n = bson_at(p + pos, len - pos, body, error);
         if (!n) {
            return false;
         }
         have_body = true;
         pos += n;
      } else if (kind == 1) {
         int32_t size = len - pos >= 4 ? rd32(p + pos) : -1;
         if (size < 5 || (size_t)size > len - pos) {
            return tm_error_set(error, 2, "document sequence size %d is invalid", (int)size);
         }
         if (!fold_sequence(extra, p + pos + 4, (size_t)size - 4, error)) {
            return false;
         }
         pos += (size_t)size;
      } else {
         return tm_error_set(error, 40432, "Unknown section kind %u in OP_MSG", kind);
      }
   }
   return have_body || tm_error_set(error, 40587, "OP_MSG has no body section");
}

static md_wire_result_t
parse_msg(const uint8_t *p, size_t len, md_request_t *req, bson_error_t *error)
{
   uint32_t flags = (uint32_t)rd32(p);
   p += 4;
   len -= 4;
   if (flags & 0xfffcu) {
      tm_error_set(error, 223, "Unrecognized flag bits in OP_MSG: 0x%x", flags);
      return MD_WIRE_ERROR_REPLY;
   }
   if (flags & 1u) {
      if (len < 4 || md_crc32c(p - 20, len + 16) != (uint32_t)rd32(p + len - 4)) {
         tm_error_set(error, 2, "OP_MSG checksum does not match its contents");
         return MD_WIRE_ERROR_CLOSE;
      }
      len -= 4;
   }
   req->more_to_come = (flags & 2u) != 0;
   req->exhaust_allowed = (flags & 0x10000u) != 0;
   bson_t body;
   bson_t extra = BSON_INITIALIZER; /* the kind-1 sections, folded in after the body */
   bson_iter_t it;
   bool ok = read_sections(p, len, &body, &extra, error);
   if (ok && (!bson_iter_init_find(&it, &body, "$db") || !BSON_ITER_HOLDS_UTF8(&it))) {
      ok = tm_error_set(error, 40571, "OP_MSG requests require a $db argument");
   }
   for (ok = ok && bson_iter_init(&it, &extra); ok && bson_iter_next(&it);) {
      bson_iter_t dup;
      if (bson_iter_init_find(&dup, &body, bson_iter_key(&it))) {
         ok = tm_error_set(error, 40413, "Duplicate field '%s' in OP_MSG", bson_iter_key(&it));
      }
   }
   if (ok) {
      bson_init(&req->cmd);
      bson_concat(&req->cmd, &body);
      bson_concat(&req->cmd, &extra);
   }
   bson_destroy(&extra);
   return ok ? MD_WIRE_OK : MD_WIRE_ERROR_REPLY;
}

static md_wire_result_t
parse_query(const uint8_t *p, size_t len, md_request_t *req, bson_error_t *error)
{
   if (len < 4 + 1 + 8) {
      tm_error_set(error, 2, "truncated OP_QUERY");
      return MD_WIRE_ERROR_REPLY;
   }
   const uint8_t *nul = memchr(p + 4, '\0', len - 4);
   if (!nul || (size_t)(nul - p) + 1 + 8 > len) {
      tm_error_set(error, 2, "truncated OP_QUERY collection name");
      return MD_WIRE_ERROR_REPLY;
   }
   const char *ns = (const char *)p + 4;
   size_t ns_len = (size_t)(nul - (p + 4));
   if (ns_len < 6 || strcmp(ns + ns_len - 5, ".$cmd") != 0) {
      tm_error_set(error, 5739101, "OP_QUERY is no longer supported except for commands");
      return MD_WIRE_ERROR_REPLY;
   }
   size_t pos = (size_t)(nul - p) + 1 + 8; /* skip numberToSkip and numberToReturn */
   bson_t query;
   if (!bson_at(p + pos, len - pos, &query, error)) {
      return MD_WIRE_ERROR_REPLY;
   }
   /* Old drivers wrap the command with its read preference: {$query: {...}, ...}. */
   bson_iter_t it;
   bson_t inner;
   const bson_t *cmd = &query;
   if (bson_iter_init_find(&it, &query, "$query") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t dlen;
      const uint8_t *data;
      bson_iter_document(&it, &dlen, &data);
      bson_init_static(&inner, data, dlen);
      cmd = &inner;
   }
   bson_init(&req->cmd);
   bson_copy_to_excluding_noinit(cmd, &req->cmd, "$db", NULL);
   bson_append_utf8(&req->cmd, "$db", 3, ns, (int)(ns_len - 5));
   return MD_WIRE_OK;
}

md_wire_result_t
md_wire_parse(const uint8_t *msg, size_t len, md_request_t *req, bson_error_t *error)
{
   memset(req, 0, sizeof *req);
   if (len < 16 || rd32(msg) != (int32_t)len) {
      tm_error_set(error, 2, "message length does not match its header");
      return MD_WIRE_ERROR_CLOSE;
   }
   req->request_id = rd32(msg + 4);
   req->op_code = rd32(msg + 12);
   if (req->op_code == MD_OP_MSG && len >= 16 + 4) {
      return parse_msg(msg + 16, len - 16, req, error);
   }
   if (req->op_code == MD_OP_QUERY) {
      return parse_query(msg + 16, len - 16, req, error);
   }
   tm_error_set(error, 2, "unsupported opcode %d", (int)req->op_code);
   return MD_WIRE_ERROR_CLOSE;
}

void
md_request_destroy(md_request_t *req)
{
   bson_destroy(&req->cmd);
}

void
md_wire_set_more_to_come(uint8_t *reply)
{
   wr32(reply + 16, 2);
}

uint8_t *
md_wire_build_reply(int32_t op_code, int32_t request_id, int32_t response_to, const bson_t *doc,
                    size_t *len)
{
   bool legacy = op_code == MD_OP_QUERY;
   size_t head = legacy ? 16 + 4 + 8 + 4 + 4 : 16 + 4 + 1;
   size_t total = head + doc->len;
   uint8_t *buf = bson_malloc(total);
   wr32(buf, (int32_t)total);
   wr32(buf + 4, request_id);
   wr32(buf + 8, response_to);
   wr32(buf + 12, legacy ? MD_OP_REPLY : MD_OP_MSG);
   if (legacy) {
      wr32(buf + 16, 8); /* AwaitCapable */
      memset(buf + 20, 0, 8);
      wr32(buf + 28, 0);
      wr32(buf + 32, 1);
   } else {
      wr32(buf + 16, 0);
      buf[20] = 0;
   }
   memcpy(buf + head, bson_get_data(doc), doc->len);
   *len = total;
   return buf;
}
