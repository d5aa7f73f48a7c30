/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The cryptography of SCRAM (RFC 5802, RFC 7677) as MongoDB uses it, on OpenSSL's libcrypto
 * (digests, HMAC, PBKDF2, random bytes, base64) and ICU (SASLprep, RFC 4013). No state: safe
 * from any thread.
 */
#ifndef MD_AUTH_CRYPTO_H
#define MD_AUTH_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD_SCRAM_MAX_HASH 32

typedef enum { MD_SCRAM_SHA1, MD_SCRAM_SHA256 } md_scram_mech_t;

/* What a server stores for one user and mechanism (RFC 5802 section 3): never the password. */
typedef struct {
   bool set;
   uint8_t salt[MD_SCRAM_MAX_HASH];
   size_t salt_len;
   int iterations;
   uint8_t stored_key[MD_SCRAM_MAX_HASH];
   uint8_t server_key[MD_SCRAM_MAX_HASH];
} md_scram_cred_t;

/* "SCRAM-SHA-1" / "SCRAM-SHA-256". */
const char *md_scram_mech_name(md_scram_mech_t mech);
/* Parses a mechanism name; false if it is neither. */
bool md_scram_mech_parse(const char *name, md_scram_mech_t *mech);
/* The digest length: 20 or 32. */
size_t md_scram_hash_len(md_scram_mech_t mech);

/* Derives the stored credential from a clear-text password with a fresh random salt and
 * MongoDB's default iteration counts (10000 for SHA-1, 15000 for SHA-256). SCRAM-SHA-1 uses
 * hex(MD5("user:mongo:password")) as the password; SCRAM-SHA-256 the SASLprepped password.
 * Returns false with a message in `err` (e.g. a password SASLprep prohibits). */
bool md_scram_cred_derive(md_scram_mech_t mech, const char *user, const char *password,
                          md_scram_cred_t *cred, char *err, size_t err_len);

/* HMAC(key, data) with the mechanism's digest; `out` holds md_scram_hash_len() bytes. */
void md_scram_hmac(md_scram_mech_t mech, const uint8_t *key, size_t key_len, const void *data,
                   size_t data_len, uint8_t *out);
/* H(data). */
void md_scram_hash(md_scram_mech_t mech, const void *data, size_t len, uint8_t *out);

/* Fills `buf` with cryptographically random bytes. */
void md_random_bytes(uint8_t *buf, size_t len);

/* Base64 of `len` bytes, NUL-terminated (bson_free it). */
char *md_base64_encode(const uint8_t *data, size_t len);
/* Decodes standard base64 (padding required); returns a bson_malloc'ed buffer and its length
 * in *out_len, or NULL if the text is not base64. */
uint8_t *md_base64_decode(const char *text, size_t text_len, size_t *out_len);

/* SASLprep (RFC 4013, stored-string rules) of a UTF-8 string; NULL if it is prohibited
 * (bson_free the result). */
char *md_saslprep(const char *in);

/* Compares two buffers in time that does not depend on where they differ. */
bool md_bytes_equal(const uint8_t *a, const uint8_t *b, size_t len);

#endif
