/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * SCRAM-SHA-1 and SCRAM-SHA-256 conversations (RFC 5802, RFC 7677) as mongod runs them:
 * saslStart {mechanism, payload: BinData(client-first), options: {skipEmptyExchange}} answers
 * {conversationId: 1, done: false, payload: server-first}; saslContinue with the client-final
 * message answers the server signature (done: true when the client asked to skip the empty
 * exchange, else one more empty round). hello's speculativeAuthenticate runs the first step
 * inside the handshake. Every failure the client could learn from (unknown user, wrong
 * password, bad proof) is 18 "Authentication failed.", as mongod answers. The conversation
 * state lives in the connection (md_auth_conn_t).
 */
#include <string.h>

#include <openssl/crypto.h>

#include "auth/auth-cmd.h"
#include "auth/auth-private.h"

#define NONCE_BYTES 24

static bool
auth_failed(bson_error_t *error)
{
   return tm_error_set(error, 18, "Authentication failed.");
}

void
md_auth_conn_end_conversation(md_auth_conn_t *ac)
{
   bson_free(ac->conv_db);
   bson_free(ac->conv_user);
   bson_free(ac->client_first_bare);
   bson_free(ac->server_first);
   bson_free(ac->nonce);
   ac->conv_db = ac->conv_user = ac->client_first_bare = ac->server_first = ac->nonce = NULL;
   ac->step = 0;
}

void
md_auth_conn_cleanup(md_auth_conn_t *ac)
{
   md_auth_conn_end_conversation(ac);
   bson_free(ac->user_db);
   bson_free(ac->user_name);
   ac->user_db = ac->user_name = NULL;
}

/* The value of attribute `name` ("r" for "r=...") in a comma-separated SCRAM message, copied,
 * or NULL. */
static char *
attr(const char *msg, char name)
{
   for (const char *p = msg; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL) {
      if (p[0] == name && p[1] == '=') {
         const char *end = strchr(p, ',');
         return bson_strndup(p + 2, end ? (size_t)(end - p - 2) : strlen(p + 2));
      }
   }
   return NULL;
}

/* saslname (RFC 5802 5.1): "=2C" is ',', "=3D" is '='; any other '=' is malformed. */
static char *
decode_username(const char *in)
{
   char *out = bson_malloc(strlen(in) + 1), *o = out;
   for (const char *p = in; *p; p++) {
      if (*p != '=') {
         *o++ = *p;
      } else if (strncmp(p, "=2C", 3) == 0 || strncmp(p, "=3D", 3) == 0) {
         *o++ = p[1] == '2' ? ',' : '=';
         p += 2;
      } else {
         bson_free(out);
         return NULL;
      }
   }
   *o = '\0';
   return out;
}

/* The payload of a sasl command: BinData (any subtype) or a string. */
static bool
get_payload(const bson_t *doc, const char **data, uint32_t *len)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, "payload")) {
      return false;
   }
   if (BSON_ITER_HOLDS_BINARY(&it)) {
      bson_subtype_t sub;
      bson_iter_binary(&it, &sub, len, (const uint8_t **)data);
      return true;
   }
   if (BSON_ITER_HOLDS_UTF8(&it)) {
      *data = bson_iter_utf8(&it, len);
      return true;
   }
   return false;
}

static void
append_step(bson_t *out, bool done, const char *payload)
{
   BSON_APPEND_INT32(out, "conversationId", 1);
   BSON_APPEND_BOOL(out, "done", done);
   bson_append_binary(out, "payload", -1, BSON_SUBTYPE_BINARY, (const uint8_t *)payload,
                      (uint32_t)strlen(payload));
}

/* Step 1: client-first "n,,n=user,r=cnonce" -> server-first "r=cnonce+snonce,s=salt,i=N". */
static bool
first_step(md_cmd_t *c, const bson_t *doc, const char *db, bson_t *out, bson_error_t *error)
{
   md_auth_conn_t *ac = &c->conn->auth;
   bson_iter_t it, opt;
   const char *mech_name = bson_iter_init_find(&it, doc, "mechanism") && BSON_ITER_HOLDS_UTF8(&it)
                              ? bson_iter_utf8(&it, NULL)
                              : "";
   md_scram_mech_t mech;
   const char *data;
   uint32_t len;
   md_auth_conn_end_conversation(ac);
   if (!md_scram_mech_parse(mech_name, &mech)) {
      return tm_error_set(error, 334,
                          "Received authentication for mechanism %s which is not "
                          "enabled",
                          mech_name);
   }
   c->srv->users.authenticate[mech].received++;
   if (out != c->reply) {
      c->srv->users.speculative[mech].received++;
   }
   if (!get_payload(doc, &data, &len) || len < 3 || memchr(data, '\0', len) ||
       !(strncmp(data, "n,,", 3) == 0 || strncmp(data, "y,,", 3) == 0)) {
      return auth_failed(error); /* channel binding or an authzid: not offered */
   }
   char *bare = bson_strndup(data + 3, len - 3);
   char *user_enc = attr(bare, 'n'), *cnonce = attr(bare, 'r');
   char *user = user_enc ? decode_username(user_enc) : NULL;
   const md_user_t *u = user ? md_users_find(&c->srv->users, db, user) : NULL;
   const md_scram_cred_t *cred = u ? &u->creds[mech] : NULL;
   bool ok = cred && cred->set && cnonce && *cnonce && strncmp(bare, "n=", 2) == 0;
   if (ok) {
      uint8_t rnd[NONCE_BYTES];
      md_random_bytes(rnd, sizeof rnd);
      char *snonce = md_base64_encode(rnd, sizeof rnd);
      char *salt = md_base64_encode(cred->salt, cred->salt_len);
      ac->nonce = bson_strdup_printf("%s%s", cnonce, snonce);
      ac->server_first = bson_strdup_printf("r=%s,s=%s,i=%d", ac->nonce, salt, cred->iterations);
      ac->client_first_bare = bare;
      bare = NULL;
      ac->conv_db = bson_strdup(db);
      ac->conv_user = user;
      user = NULL;
      ac->mech = mech;
      ac->step = 1;
      ac->speculative = out != c->reply;
      ac->skip_empty_exchange = bson_iter_init_find(&it, doc, "options") &&
                                BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &opt) &&
                                bson_iter_find(&opt, "skipEmptyExchange") &&
                                bson_iter_as_bool(&opt);
      append_step(out, false, ac->server_first);
      bson_free(snonce);
      bson_free(salt);
   }
   bson_free(bare);
   bson_free(user_enc);
   bson_free(user);
   bson_free(cnonce);
   return ok || auth_failed(error);
}

/* Checks ClientProof: H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey. Fills the
 * server signature HMAC(ServerKey, AuthMessage). */
static bool
verify_proof(const md_auth_conn_t *ac, const md_scram_cred_t *cred, const char *final_no_proof,
             const uint8_t *proof, size_t proof_len, uint8_t *server_sig)
{
   size_t hlen = md_scram_hash_len(ac->mech);
   if (proof_len != hlen) {
      return false;
   }
   char *auth_msg =
      bson_strdup_printf("%s,%s,%s", ac->client_first_bare, ac->server_first, final_no_proof);
   uint8_t sig[MD_SCRAM_MAX_HASH], key[MD_SCRAM_MAX_HASH], stored[MD_SCRAM_MAX_HASH];
   md_scram_hmac(ac->mech, cred->stored_key, hlen, auth_msg, strlen(auth_msg), sig);
   for (size_t i = 0; i < hlen; i++) {
      key[i] = proof[i] ^ sig[i];
   }
   md_scram_hash(ac->mech, key, hlen, stored);
   bool ok = md_bytes_equal(stored, cred->stored_key, hlen);
   md_scram_hmac(ac->mech, cred->server_key, hlen, auth_msg, strlen(auth_msg), server_sig);
   OPENSSL_cleanse(key, sizeof key);
   bson_free(auth_msg);
   return ok;
}

static void
become(md_users_t *users, md_auth_conn_t *ac)
{
   users->authenticate[ac->mech].successful++;
   if (ac->speculative) {
      users->speculative[ac->mech].successful++;
   }
   bson_free(ac->user_db);
   bson_free(ac->user_name);
   ac->user_db = bson_strdup(ac->conv_db);
   ac->user_name = bson_strdup(ac->conv_user);
}

/* Step 2: client-final "c=biws,r=nonce,p=proof" -> "v=signature". */
static bool
final_step(md_cmd_t *c, const char *data, uint32_t len, bson_error_t *error)
{
   md_auth_conn_t *ac = &c->conn->auth;
   const md_user_t *u = md_users_find(&c->srv->users, ac->conv_db, ac->conv_user);
   char *msg = bson_strndup(data, len);
   char *nonce = attr(msg, 'r'), *proof_b64 = attr(msg, 'p'), *cb = attr(msg, 'c');
   const char *p_at = strstr(msg, ",p=");
   size_t proof_len = 0;
   uint8_t *proof = proof_b64 ? md_base64_decode(proof_b64, strlen(proof_b64), &proof_len) : NULL;
   uint8_t server_sig[MD_SCRAM_MAX_HASH];
   bool ok = u && u->creds[ac->mech].set && nonce && strcmp(nonce, ac->nonce) == 0 && cb &&
             (strcmp(cb, "biws") == 0 || strcmp(cb, "eSws") == 0) && p_at && proof &&
             strlen(msg) == (size_t)len;
   if (ok) {
      char *without_proof = bson_strndup(msg, (size_t)(p_at - msg));
      ok = verify_proof(ac, &u->creds[ac->mech], without_proof, proof, proof_len, server_sig);
      bson_free(without_proof);
   }
   if (ok) {
      char *sig = md_base64_encode(server_sig, md_scram_hash_len(ac->mech));
      char *v = bson_strdup_printf("v=%s", sig);
      append_step(c->reply, ac->skip_empty_exchange, v);
      if (ac->skip_empty_exchange) {
         become(&c->srv->users, ac);
         md_auth_conn_end_conversation(ac);
      } else {
         ac->step = 2;
      }
      bson_free(v);
      bson_free(sig);
   } else {
      md_auth_conn_end_conversation(ac);
   }
   bson_free(msg);
   bson_free(nonce);
   bson_free(proof_b64);
   bson_free(cb);
   bson_free(proof);
   return ok || auth_failed(error);
}

bool
md_cmd_sasl_start(md_cmd_t *c, bson_error_t *error)
{
   /* Without --auth, users made by createUser can still authenticate, as with mongod. */
   return first_step(c, c->cmd, c->db, c->reply, error);
}

bool
md_cmd_sasl_continue(md_cmd_t *c, bson_error_t *error)
{
   md_auth_conn_t *ac = &c->conn->auth;
   bson_iter_t it;
   const char *data = "";
   uint32_t len = 0;
   if (!bson_iter_init_find(&it, c->cmd, "conversationId") || !BSON_ITER_HOLDS_NUMBER(&it) ||
       bson_iter_as_int64(&it) != 1 || ac->step == 0) {
      md_auth_conn_end_conversation(ac);
      return tm_error_set(error, 17, "No SASL session state found");
   }
   if (!get_payload(c->cmd, &data, &len)) {
      md_auth_conn_end_conversation(ac);
      return auth_failed(error);
   }
   if (ac->step == 1) {
      return final_step(c, data, len, error);
   }
   /* Step 3: the empty exchange that completes the conversation. */
   if (len != 0) {
      md_auth_conn_end_conversation(ac);
      return auth_failed(error);
   }
   become(&c->srv->users, ac);
   md_auth_conn_end_conversation(ac);
   append_step(c->reply, true, "");
   return true;
}

bool
md_cmd_authenticate(md_cmd_t *c, bson_error_t *error)
{
   bson_iter_t it;
   const char *mech = bson_iter_init_find(&it, c->cmd, "mechanism") && BSON_ITER_HOLDS_UTF8(&it)
                         ? bson_iter_utf8(&it, NULL)
                         : "";
   /* mongod 6.0 only runs MONGODB-X509 through authenticate; test-mongod does not map
    * certificates to users. */
   return tm_error_set(error, 334,
                       "Received authentication for mechanism %s which is not "
                       "enabled",
                       mech);
}

bool
md_cmd_logout(md_cmd_t *c, bson_error_t *error)
{
   (void)error;
   md_auth_conn_cleanup(&c->conn->auth);
   return true;
}

/* saslSupportedMechs: "db.user" lists the user's mechanisms (nothing if unknown). */
static void
append_supported_mechs(md_cmd_t *c, const char *spec)
{
   const char *dot = strchr(spec, '.');
   if (!dot) {
      return;
   }
   char *db = bson_strndup(spec, (size_t)(dot - spec));
   const md_user_t *u = md_users_find(&c->srv->users, db, dot + 1);
   if (u) {
      bson_t arr;
      uint32_t n = 0;
      BSON_APPEND_ARRAY_BEGIN(c->reply, "saslSupportedMechs", &arr);
      for (int m = MD_SCRAM_SHA1; m <= MD_SCRAM_SHA256; m++) {
         if (u->creds[m].set) {
            char key[16];
            const char *k;
            bson_uint32_to_string(n++, &k, key, sizeof key);
            BSON_APPEND_UTF8(&arr, k, md_scram_mech_name((md_scram_mech_t)m));
         }
      }
      bson_append_array_end(c->reply, &arr);
   }
   bson_free(db);
}

void
md_auth_hello(md_cmd_t *c)
{
   bson_iter_t it;
   if (!c->srv->users.head) {
      return;
   }
   if (bson_iter_init_find(&it, c->cmd, "saslSupportedMechs") && BSON_ITER_HOLDS_UTF8(&it)) {
      append_supported_mechs(c, bson_iter_utf8(&it, NULL));
   }
   if (!bson_iter_init_find(&it, c->cmd, "speculativeAuthenticate") ||
       !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return;
   }
   uint32_t len;
   const uint8_t *data;
   bson_t doc, step = BSON_INITIALIZER;
   bson_iter_t db_it;
   bson_error_t ignored;
   bson_iter_document(&it, &len, &data);
   if (!bson_init_static(&doc, data, len) || !bson_has_field(&doc, "saslStart")) {
      return; /* MONGODB-X509's {authenticate: 1}: not offered, the driver authenticates */
   }
   const char *db = bson_iter_init_find(&db_it, &doc, "db") && BSON_ITER_HOLDS_UTF8(&db_it)
                       ? bson_iter_utf8(&db_it, NULL)
                       : "admin";
   /* A failed speculative step is left out of the reply; the driver then runs saslStart
    * itself and gets the error there. */
   if (first_step(c, &doc, db, &step, &ignored)) {
      BSON_APPEND_DOCUMENT(c->reply, "speculativeAuthenticate", &step);
   }
   bson_destroy(&step);
}

static void
append_counter(bson_t *parent, const char *name, const md_auth_counter_t *n)
{
   bson_t d;
   BSON_APPEND_DOCUMENT_BEGIN(parent, name, &d);
   BSON_APPEND_INT64(&d, "received", n->received);
   BSON_APPEND_INT64(&d, "successful", n->successful);
   bson_append_document_end(parent, &d);
}

void
md_auth_append_server_status(md_cmd_t *c)
{
   bson_t sec, auth, mechs, m;
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "security", &sec);
   BSON_APPEND_DOCUMENT_BEGIN(&sec, "authentication", &auth);
   BSON_APPEND_DOCUMENT_BEGIN(&auth, "mechanisms", &mechs);
   for (int i = MD_SCRAM_SHA1; i <= MD_SCRAM_SHA256; i++) {
      BSON_APPEND_DOCUMENT_BEGIN(&mechs, md_scram_mech_name((md_scram_mech_t)i), &m);
      append_counter(&m, "speculativeAuthenticate", &c->srv->users.speculative[i]);
      append_counter(&m, "authenticate", &c->srv->users.authenticate[i]);
      bson_append_document_end(&mechs, &m);
   }
   bson_append_document_end(&auth, &mechs);
   bson_append_document_end(&sec, &auth);
   bson_append_document_end(c->reply, &sec);
}
