/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * SCRAM's primitives on OpenSSL's libcrypto and ICU's SASLprep profile: nothing here is
 * hand-written cryptography, only the glue MongoDB's variant needs.
 */
#include "auth/auth-crypto.h"

#include <stdio.h>
#include <string.h>

#include <bson/bson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <unicode/usprep.h>
#include <unicode/ustring.h>

const char *
md_scram_mech_name(md_scram_mech_t mech)
{
   return mech == MD_SCRAM_SHA1 ? "SCRAM-SHA-1" : "SCRAM-SHA-256";
}

bool
md_scram_mech_parse(const char *name, md_scram_mech_t *mech)
{
   if (strcmp(name, "SCRAM-SHA-1") == 0) {
      *mech = MD_SCRAM_SHA1;
      return true;
   }
   if (strcmp(name, "SCRAM-SHA-256") == 0) {
      *mech = MD_SCRAM_SHA256;
      return true;
   }
   return false;
}

static const EVP_MD *
digest(md_scram_mech_t mech)
{
   return mech == MD_SCRAM_SHA1 ? EVP_sha1() : EVP_sha256();
}

size_t
md_scram_hash_len(md_scram_mech_t mech)
{
   return mech == MD_SCRAM_SHA1 ? 20 : 32;
}

void
md_scram_hmac(md_scram_mech_t mech, const uint8_t *key, size_t key_len, const void *data,
              size_t data_len, uint8_t *out)
{
   unsigned int len = 0;
   HMAC(digest(mech), key, (int)key_len, data, data_len, out, &len);
}

void
md_scram_hash(md_scram_mech_t mech, const void *data, size_t len, uint8_t *out)
{
   unsigned int out_len = 0;
   EVP_Digest(data, len, out, &out_len, digest(mech), NULL);
}

void
md_random_bytes(uint8_t *buf, size_t len)
{
   if (RAND_bytes(buf, (int)len) != 1) {
      /* OpenSSL seeds from the kernel; failing that there is nothing safe to fall back to. */
      fprintf(stderr, "test-mongod: RAND_bytes failed\n");
      abort();
   }
}

bool
md_bytes_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
   return CRYPTO_memcmp(a, b, len) == 0;
}

char *
md_base64_encode(const uint8_t *data, size_t len)
{
   char *out = bson_malloc(4 * ((len + 2) / 3) + 1);
   EVP_EncodeBlock((unsigned char *)out, data, (int)len);
   return out;
}

uint8_t *
md_base64_decode(const char *text, size_t text_len, size_t *out_len)
{
   if (text_len % 4 != 0) {
      return NULL;
   }
   for (size_t i = 0; i < text_len; i++) {
      char ch = text[i];
      bool pad_ok = ch == '=' && i >= text_len - 2 && (i == text_len - 1 || text[i + 1] == '=');
      if (!(ch >= 'A' && ch <= 'Z') && !(ch >= 'a' && ch <= 'z') && !(ch >= '0' && ch <= '9') &&
          ch != '+' && ch != '/' && !pad_ok) {
         return NULL;
      }
   }
   uint8_t *out = bson_malloc(text_len / 4 * 3 + 1);
   int n = text_len ? EVP_DecodeBlock(out, (const unsigned char *)text, (int)text_len) : 0;
   if (n < 0) {
      bson_free(out);
      return NULL;
   }
   /* EVP_DecodeBlock counts the padding as zero bytes. */
   size_t pad = 0;
   while (pad < 2 && text_len > pad && text[text_len - 1 - pad] == '=') {
      pad++;
   }
   *out_len = (size_t)n - pad;
   return out;
}

char *
md_saslprep(const char *in)
{
   UErrorCode status = U_ZERO_ERROR;
   int32_t n16 = 0;
   u_strFromUTF8(NULL, 0, &n16, in, -1, &status);
   if (status != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(status)) {
      return NULL;
   }
   status = U_ZERO_ERROR;
   UChar *src = bson_malloc(((size_t)n16 + 1) * sizeof *src);
   u_strFromUTF8(src, n16 + 1, NULL, in, -1, &status);
   UStringPrepProfile *prep = usprep_openByType(USPREP_RFC4013_SASLPREP, &status);
   /* NFKC can grow a string, but not beyond a few times its length. */
   int32_t cap = 4 * n16 + 16;
   UChar *dst = bson_malloc((size_t)cap * sizeof *dst);
   int32_t n_dst = U_SUCCESS(status)
                      ? usprep_prepare(prep, src, n16, dst, cap, USPREP_DEFAULT, NULL, &status)
                      : 0;
   char *out = NULL;
   if (U_SUCCESS(status)) {
      int32_t n8 = 0;
      UErrorCode st8 = U_ZERO_ERROR;
      u_strToUTF8(NULL, 0, &n8, dst, n_dst, &st8);
      out = bson_malloc((size_t)n8 + 1);
      st8 = U_ZERO_ERROR;
      u_strToUTF8(out, n8 + 1, NULL, dst, n_dst, &st8);
      if (U_FAILURE(st8)) {
         bson_free(out);
         out = NULL;
      }
   }
   if (prep) {
      usprep_close(prep);
   }
   bson_free(src);
   bson_free(dst);
   return out;
}

/* SCRAM-SHA-1's password in MongoDB: hex(MD5("<user>:mongo:<password>")), lowercase. */
static char *
mongo_cr_digest(const char *user, const char *password)
{
   char *text = bson_strdup_printf("%s:mongo:%s", user, password);
   uint8_t md[16];
   unsigned int len = 0;
   EVP_Digest(text, strlen(text), md, &len, EVP_md5(), NULL);
   OPENSSL_cleanse(text, strlen(text));
   bson_free(text);
   char *hex = bson_malloc(33);
   for (int i = 0; i < 16; i++) {
      snprintf(hex + 2 * i, 3, "%02x", md[i]);
   }
   return hex;
}

bool
md_scram_cred_derive(md_scram_mech_t mech, const char *user, const char *password,
                     md_scram_cred_t *cred, char *err, size_t err_len)
{
   char *prepared = mech == MD_SCRAM_SHA1 ? mongo_cr_digest(user, password) : md_saslprep(password);
   if (!prepared) {
      snprintf(err, err_len, "the password is not allowed by SASLprep (RFC 4013)");
      return false;
   }
   size_t hlen = md_scram_hash_len(mech);
   uint8_t salted[MD_SCRAM_MAX_HASH], client_key[MD_SCRAM_MAX_HASH];
   memset(cred, 0, sizeof *cred);
   cred->salt_len = hlen - 4; /* MongoDB's salt length: 16 and 28 bytes */
   cred->iterations = mech == MD_SCRAM_SHA1 ? 10000 : 15000;
   md_random_bytes(cred->salt, cred->salt_len);
   PKCS5_PBKDF2_HMAC(prepared, (int)strlen(prepared), cred->salt, (int)cred->salt_len,
                     cred->iterations, digest(mech), (int)hlen, salted);
   md_scram_hmac(mech, salted, hlen, "Client Key", 10, client_key);
   md_scram_hash(mech, client_key, hlen, cred->stored_key);
   md_scram_hmac(mech, salted, hlen, "Server Key", 10, cred->server_key);
   OPENSSL_cleanse(salted, sizeof salted);
   OPENSSL_cleanse(client_key, sizeof client_key);
   OPENSSL_cleanse(prepared, strlen(prepared));
   bson_free(prepared);
   cred->set = true;
   return true;
}
