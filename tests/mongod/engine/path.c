/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Dotted paths: parsing, plain lookup, and the array fan-out that query matching uses.
 */
#include <string.h>

#include "engine-private.h"

bool
tm_path_parse(const char *dotted, tm_path_t *path)
{
   const char *start = dotted;
   const char *dot;
   size_t cap = 4;

   path->n = 0;
   path->dotted = bson_strdup(dotted);
   path->parts = bson_malloc(cap * sizeof(char *));
   for (;;) {
      dot = strchr(start, '.');
      if (path->n == cap) {
         cap *= 2;
         path->parts = bson_realloc(path->parts, cap * sizeof(char *));
      }
      path->parts[path->n++] =
         dot ? bson_strndup(start, (size_t)(dot - start)) : bson_strdup(start);
      if (!dot) {
         break;
      }
      start = dot + 1;
   }
   /* Empty components ("a..b", ".a", "a.", "") make the path invalid. */
   for (size_t i = 0; i < path->n; i++) {
      if (path->parts[i][0] == '\0') {
         return false;
      }
   }
   return true;
}

void
tm_path_destroy(tm_path_t *path)
{
   if (!path || !path->parts) {
      return;
   }
   for (size_t i = 0; i < path->n; i++) {
      bson_free(path->parts[i]);
   }
   bson_free(path->parts);
   bson_free(path->dotted);
   path->parts = NULL;
   path->dotted = NULL;
   path->n = 0;
}

bool
tm_path_is_index(const char *s, size_t *index)
{
   size_t v = 0;

   if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) > 9) {
      return false;
   }
   for (const char *c = s; *c; c++) {
      if (*c < '0' || *c > '9') {
         return false;
      }
      v = v * 10 + (size_t)(*c - '0');
   }
   if (index) {
      *index = v;
   }
   return true;
}

bool
tm_value_as_bson(const bson_value_t *v, bson_t *b)
{
   if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY) {
      return false;
   }
   return bson_init_static(b, v->value.v_doc.data, v->value.v_doc.data_len);
}

static uint32_t
le32(const uint8_t *p)
{
   return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Sets *@n to the bytes of the value of type @type at @p, of which @avail are left before the
 * document's terminator; false when the type is unknown or the value does not fit (the caller
 * then lets libbson decide). */
static bool
raw_value_size(uint8_t type, const uint8_t *p, size_t avail, size_t *n)
{
   const uint8_t *nul;
   switch (type) {
   case BSON_TYPE_NULL:
   case BSON_TYPE_UNDEFINED:
   case BSON_TYPE_MINKEY:
   case BSON_TYPE_MAXKEY:
      *n = 0;
      break;
   case BSON_TYPE_BOOL:
      *n = 1;
      break;
   case BSON_TYPE_INT32:
      *n = 4;
      break;
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DATE_TIME:
   case BSON_TYPE_TIMESTAMP:
   case BSON_TYPE_INT64:
      *n = 8;
      break;
   case BSON_TYPE_OID:
      *n = 12;
      break;
   case BSON_TYPE_DECIMAL128:
      *n = 16;
      break;
   case BSON_TYPE_UTF8:
   case BSON_TYPE_CODE:
   case BSON_TYPE_SYMBOL:
      *n = avail >= 4 ? 4 + (size_t)le32(p) : SIZE_MAX;
      break;
   case BSON_TYPE_DBPOINTER:
      *n = avail >= 4 ? 4 + (size_t)le32(p) + 12 : SIZE_MAX;
      break;
   case BSON_TYPE_BINARY:
      *n = avail >= 4 ? 5 + (size_t)le32(p) : SIZE_MAX;
      break;
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
   case BSON_TYPE_CODEWSCOPE:
      *n = avail >= 4 ? (size_t)le32(p) : SIZE_MAX;
      break;
   case BSON_TYPE_REGEX:
      nul = memchr(p, 0, avail);
      nul = nul ? memchr(nul + 1, 0, avail - (size_t)(nul + 1 - p)) : NULL;
      *n = nul ? (size_t)(nul + 1 - p) : SIZE_MAX;
      break;
   default:
      return false;
   }
   return *n <= avail;
}

/* Like bson_iter_init_find, which steps through the elements with bson_iter_next (checking
 * each as it goes, ~80 instructions an element): matching and expressions look paths up in
 * every document and change event, and that was a sixth of the server's work on a busy
 * change stream. This skips elements by their sizes and has libbson parse only the element
 * found; anything it cannot skip safely goes to bson_iter_init_find. */
bool
tm_bson_find(const bson_t *doc, const char *key, bson_iter_t *it)
{
   const uint8_t *data = bson_get_data(doc);
   size_t len = doc->len, keylen = strlen(key), off = 4;
   while (off < len - 1) {
      const uint8_t *k = data + off + 1;
      const uint8_t *nul = memchr(k, 0, len - off - 1);
      size_t voff, n;
      if (!nul || nul == data + len - 1) {
         break;
      }
      voff = (size_t)(nul + 1 - data);
      if ((size_t)(nul - k) == keylen && memcmp(k, key, keylen) == 0) {
         /* libbson parses (and checks) the element itself. */
         return bson_iter_init_from_data_at_offset(it, data, len, (uint32_t)off, (uint32_t)keylen);
      }
      if (!raw_value_size(data[off], data + voff, len - 1 - voff, &n)) {
         break;
      }
      off = voff + n;
   }
   return off == len - 1 ? false : bson_iter_init_find(it, doc, key);
}

typedef struct {
   const tm_path_t *path;
   bool expand_leaf;
   tm_path_visit_fn fn;
   void *ctx;
} walk_t;

static bool visit_value(const walk_t *w, const bson_value_t *v, size_t i, int32_t idx);

static bool
visit_doc(const walk_t *w, const bson_value_t *doc, size_t i, int32_t idx)
{
   bson_t view;
   bson_iter_t it;

   if (!tm_value_as_bson(doc, &view) || !tm_bson_find(&view, w->path->parts[i], &it)) {
      return w->fn(NULL, idx, w->ctx);
   }
   return visit_value(w, bson_iter_value(&it), i + 1, idx);
}

static bool
visit_array(const walk_t *w, const bson_value_t *arr, size_t i, int32_t idx)
{
   bson_t view;
   bson_iter_t it;
   bool any = false;
   size_t k;
   int32_t j = 0;

   if (!tm_value_as_bson(arr, &view) || !bson_iter_init(&it, &view)) {
      return w->fn(NULL, idx, w->ctx);
   }
   if (tm_path_is_index(w->path->parts[i], &k)) {
      bson_iter_t ik;
      if (tm_bson_find(&view, w->path->parts[i], &ik)) {
         any = true;
         if (visit_value(w, bson_iter_value(&ik), i + 1, idx < 0 ? (int32_t)k : idx)) {
            return true;
         }
      }
   }
   /* Only documents directly inside the array are searched; nested arrays are not. */
   for (; bson_iter_next(&it); j++) {
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         any = true;
         if (visit_doc(w, bson_iter_value(&it), i, idx < 0 ? j : idx)) {
            return true;
         }
      }
   }
   return any ? false : w->fn(NULL, idx, w->ctx);
}

static bool
visit_value(const walk_t *w, const bson_value_t *v, size_t i, int32_t idx)
{
   if (i == w->path->n) {
      if (v->value_type == BSON_TYPE_ARRAY && w->expand_leaf) {
         bson_t view;
         bson_iter_t it;
         int32_t j = 0;
         if (tm_value_as_bson(v, &view) && bson_iter_init(&it, &view)) {
            for (; bson_iter_next(&it); j++) {
               if (w->fn(bson_iter_value(&it), idx < 0 ? j : idx, w->ctx)) {
                  return true;
               }
            }
         }
      }
      return w->fn(v, idx, w->ctx);
   }
   if (v->value_type == BSON_TYPE_DOCUMENT) {
      return visit_doc(w, v, i, idx);
   }
   if (v->value_type == BSON_TYPE_ARRAY) {
      return visit_array(w, v, i, idx);
   }
   return w->fn(NULL, idx, w->ctx);
}

bool
tm_path_visit(const bson_t *doc, const tm_path_t *path, bool expand_leaf, tm_path_visit_fn fn,
              void *ctx)
{
   walk_t w = {path, expand_leaf, fn, ctx};
   bson_value_t root;

   root.value_type = BSON_TYPE_DOCUMENT;
   root.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   root.value.v_doc.data_len = doc->len;
   return visit_doc(&w, &root, 0, -1);
}

bool
tm_path_get_parts(const bson_t *doc, const tm_path_t *path, size_t from, bson_value_t *value)
{
   bson_iter_t it;
   bson_t view;
   const bson_t *cur = doc;

   for (size_t i = from; i < path->n; i++) {
      if (!tm_bson_find(cur, path->parts[i], &it)) {
         return false;
      }
      if (i + 1 < path->n) {
         if (!BSON_ITER_HOLDS_DOCUMENT(&it) && !BSON_ITER_HOLDS_ARRAY(&it)) {
            return false;
         }
         if (!tm_value_as_bson(bson_iter_value(&it), &view)) {
            return false;
         }
         cur = &view;
      }
   }
   if (value) {
      *value = *bson_iter_value(&it);
   }
   return path->n > from;
}

bool
tm_path_get(const bson_t *doc, const char *dotted, bson_value_t *value)
{
   tm_path_t path;
   bool ok;

   ok = tm_path_parse(dotted, &path) && tm_path_get_parts(doc, &path, 0, value);
   tm_path_destroy(&path);
   return ok;
}

typedef struct {
   tm_path_value_fn fn;
   void *ctx;
} foreach_t;

static bool
foreach_visit(const bson_value_t *value, int32_t index, void *ctx)
{
   foreach_t *f = ctx;

   /* Arrays at the end were already expanded into their elements. */
   if (!value || value->value_type == BSON_TYPE_ARRAY) {
      return false;
   }
   return !f->fn(value, f->ctx);
}

void
tm_path_foreach(const bson_t *doc, const char *dotted, tm_path_value_fn fn, void *ctx)
{
   tm_path_t path;
   foreach_t f = {fn, ctx};

   if (tm_path_parse(dotted, &path)) {
      tm_path_visit(doc, &path, true, foreach_visit, &f);
   }
   tm_path_destroy(&path);
}
