/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Collections, databases and indexes. Drops and renames are logged, so change streams see
 * `drop`, `rename` and `dropDatabase` events (and are invalidated where MongoDB does).
 * Outside transactions, DDL on a collection an open transaction uses waits for it to end (as
 * its exclusive lock does in mongod); in a transaction, create and createIndexes work on the
 * transaction's new collections only, and take effect at commit.
 */
#include <stdlib.h>
#include <string.h>

#include "commands/commands.h"
#include "data/query.h"
#include "data/validator.h"

void md_reply_first_batch(md_cmd_t *c, const char *ns, bson_t **docs, size_t n, int64_t batch_size,
                          bool single_batch);

static void
log_ddl(md_server_t *srv, md_op_t op, const char *db, const char *coll, const char *to_db,
        const char *to_coll)
{
   md_oplog_parts_t parts = {.op = op, .db = db, .coll = coll, .to_db = to_db, .to_coll = to_coll};
   md_oplog_append(&srv->data.oplog, md_oplog_entry_new(&parts));
}

static const char *const create_options[] = {"capped",
                                             "size",
                                             "max",
                                             "changeStreamPreAndPostImages",
                                             "storageEngine",
                                             "idIndex",
                                             "validator",
                                             "validationLevel",
                                             "validationAction",
                                             "indexOptionDefaults",
                                             "viewOn",
                                             "pipeline",
                                             "collation",
                                             "timeseries",
                                             "expireAfterSeconds",
                                             "clusteredIndex",
                                             "autoIndexId",
                                             "flags",
                                             NULL};

static bool
check_create_options(const bson_t *cmd, bson_error_t *error)
{
   static const char *const unsupported[] = {"capped", "timeseries", "clusteredIndex",
                                             "expireAfterSeconds", NULL};
   bson_iter_t it;
   for (int i = 0; unsupported[i]; i++) {
      if (bson_iter_init_find(&it, cmd, unsupported[i]) &&
          (BSON_ITER_HOLDS_DOCUMENT(&it) ? bson_iter_value(&it)->value.v_doc.data_len > 5
                                         : bson_iter_as_bool(&it))) {
         return tm_error_set(error, 2, "create option '%s' is not supported by test-mongod",
                             unsupported[i]);
      }
   }
   return md_check_collation(cmd, error) && md_validator_check_options(cmd, "create", error);
}

bool
md_cmd_create(md_cmd_t *c, bson_error_t *error)
{
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, create_options, error) ||
       !check_create_options(c->cmd, error)) {
      return false;
   }
   bson_iter_t it, pipeline;
   bool is_view = bson_iter_init_find(&it, c->cmd, "viewOn");
   if (is_view && !BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 14, "'viewOn' must be a string");
   }
   const char *view_on = is_view ? bson_iter_utf8(&it, NULL) : NULL;
   bson_t view_pipeline = BSON_INITIALIZER;
   if (bson_iter_init_find(&pipeline, c->cmd, "pipeline")) {
      uint32_t len;
      const uint8_t *data;
      if (!is_view || !BSON_ITER_HOLDS_ARRAY(&pipeline)) {
         return tm_error_set(error, is_view ? 14 : 9,
                             "'pipeline' requires 'viewOn' and must "
                             "be an array");
      }
      bson_iter_array(&pipeline, &len, &data);
      bson_destroy(&view_pipeline);
      bson_init_static(&view_pipeline, data, len);
   }
   if (is_view && c->txn) {
      return tm_error_set(error, 263, "Cannot create a view in a multi-document transaction.");
   }
   bool created;
   md_coll_t *coll;
   if (!c->txn && !md_cmd_wait_ddl(c, c->db, name, error)) {
      return false;
   }
   md_cmd_catalog_note(c, name);
   if (!md_cmd_coll(c, name, MD_COLL_WRITE | MD_COLL_CREATE, &coll, &created, error)) {
      return false;
   }
   if (!created) {
      bson_destroy(&view_pipeline);
      return tm_error_set(error, 48, "Collection %s.%s already exists.", c->db, name);
   }
   if (is_view) {
      md_coll_make_view(coll, view_on, &view_pipeline);
   }
   bson_destroy(&view_pipeline);
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   while (bson_iter_next(&it)) {
      for (int i = 0; create_options[i]; i++) {
         if (strcmp(bson_iter_key(&it), create_options[i]) == 0) {
            bson_append_value(coll->options, bson_iter_key(&it), -1, bson_iter_value(&it));
         }
      }
   }
   md_validator_install(coll);
   return true;
}

static void
drop_coll(md_server_t *srv, md_coll_t *coll)
{
   log_ddl(srv, MD_OP_DROP, coll->db->name, coll->name, NULL, NULL);
   md_store_drop_coll(srv->data.store, coll);
}

bool
md_cmd_drop(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {NULL};
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!md_cmd_wait_ddl(c, c->db, name, error)) {
      return false;
   }
   md_coll_t *coll = md_store_coll(c->srv->data.store, c->db, name, false, NULL);
   if (!coll) {
      return tm_error_set(error, 26, "ns not found");
   }
   BSON_APPEND_INT32(c->reply, "nIndexesWas", (int32_t)coll->n_indexes);
   char *ns = bson_strdup_printf("%s.%s", c->db, name);
   BSON_APPEND_UTF8(c->reply, "ns", ns);
   bson_free(ns);
   drop_coll(c->srv, coll);
   return true;
}

bool
md_cmd_drop_database(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {NULL};
   if (!md_cmd_check_fields(c, allowed, error) || !md_cmd_wait_ddl(c, c->db, NULL, error)) {
      return false;
   }
   md_db_t *db = md_store_db(c->srv->data.store, c->db, false);
   if (db) {
      while (db->colls) {
         drop_coll(c->srv, db->colls);
      }
      log_ddl(c->srv, MD_OP_DROP_DATABASE, c->db, NULL, NULL, NULL);
      md_store_drop_db(c->srv->data.store, db);
      BSON_APPEND_UTF8(c->reply, "dropped", c->db);
   }
   return true;
}

/* In a transaction a new index needs a new, empty collection of that transaction. (A failed
 * statement aborts the transaction, copy and all.) */
static bool
index_allowed_in_txn(const md_cmd_t *c, const md_coll_t *coll, bson_error_t *error)
{
   if (!c->txn) {
      return true;
   }
   if (!coll->txn_view || !coll->txn_view->created) {
      return tm_error_set(error, 263,
                          "Cannot create new indexes on existing collection %s.%s "
                          "in a multi-document transaction.",
                          c->db, coll->name);
   }
   if (coll->count > 0) {
      return tm_error_set(error, 263,
                          "Cannot create new indexes on non-empty collection %s.%s "
                          "in a multi-document transaction.",
                          c->db, coll->name);
   }
   return true;
}

bool
md_cmd_create_indexes(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"indexes", "commitQuorum", "ignoreUnknownIndexOptions",
                                         "isTimeseriesNamespace", NULL};
   bson_iter_t it, arr;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "indexes") || !BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 40414,
                          "BSON field 'createIndexes.indexes' is missing but a "
                          "required field");
   }
   bool created;
   md_coll_t *coll;
   if (!c->txn && !md_cmd_wait_ddl(c, c->db, name, error)) {
      return false;
   }
   md_cmd_catalog_note(c, name);
   if (!md_cmd_coll(c, name, MD_COLL_WRITE | MD_COLL_CREATE, &coll, &created, error) ||
       !md_check_not_view(coll, error)) {
      return false;
   }
   int32_t before = (int32_t)coll->n_indexes;
   bson_iter_recurse(&it, &arr);
   while (bson_iter_next(&arr)) {
      bson_t spec;
      bool existed;
      uint32_t len;
      const uint8_t *data;
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) {
         return tm_error_set(error, 14, "index specifications must be documents");
      }
      bson_iter_document(&arr, &len, &data);
      bson_init_static(&spec, data, len);
      if (!md_coll_create_index(coll, &spec, &existed, error) ||
          (!existed && !index_allowed_in_txn(c, coll, error))) {
         return false;
      }
   }
   BSON_APPEND_BOOL(c->reply, "createdCollectionAutomatically", created);
   BSON_APPEND_INT32(c->reply, "numIndexesBefore", before);
   BSON_APPEND_INT32(c->reply, "numIndexesAfter", (int32_t)coll->n_indexes);
   if (before == (int32_t)coll->n_indexes) {
      BSON_APPEND_UTF8(c->reply, "note", "all indexes already exist");
   }
   return true;
}

static bool
drop_one_index(md_coll_t *coll, const bson_value_t *v, bson_error_t *error)
{
   if (v->value_type == BSON_TYPE_UTF8) {
      if (strcmp(v->value.v_utf8.str, "*") == 0) {
         while (coll->n_indexes > 1) {
            md_coll_drop_index(coll, coll->indexes[1]->name, error);
         }
         return true;
      }
      return md_coll_drop_index(coll, v->value.v_utf8.str, error);
   }
   md_index_t *ix = v->value_type == BSON_TYPE_DOCUMENT ? md_coll_find_index(coll, v) : NULL;
   if (!ix) {
      return tm_error_set(error, 27, "can't find index with key");
   }
   return md_coll_drop_index(coll, ix->name, error);
}

bool
md_cmd_drop_indexes(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"index", NULL};
   bson_iter_t it, arr;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_wait_ddl(c, c->db, name, error)) {
      return false;
   }
   md_coll_t *coll = md_store_coll(c->srv->data.store, c->db, name, false, NULL);
   if (!coll) {
      return tm_error_set(error, 26, "ns not found %s.%s", c->db, name);
   }
   if (!md_check_not_view(coll, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "index")) {
      return tm_error_set(error, 40414,
                          "BSON field 'dropIndexes.index' is missing but a "
                          "required field");
   }
   BSON_APPEND_INT32(c->reply, "nIndexesWas", (int32_t)coll->n_indexes);
   if (BSON_ITER_HOLDS_ARRAY(&it)) {
      bson_iter_recurse(&it, &arr);
      while (bson_iter_next(&arr)) {
         if (!drop_one_index(coll, bson_iter_value(&arr), error)) {
            return false;
         }
      }
      return true;
   }
   return drop_one_index(coll, bson_iter_value(&it), error);
}

bool
md_cmd_list_indexes(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"cursor", NULL};
   bson_t cursor;
   bool found;
   int64_t batch_size = 101;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "cursor", &cursor, &found, error) ||
       !md_cmd_get_int64(&cursor, "batchSize", &batch_size, error)) {
      return false;
   }
   md_coll_t *coll =
      md_cmd_catalog_at(c, name, md_store_coll(c->srv->data.store, c->db, name, false, NULL));
   if (!coll) {
      return tm_error_set(error, 26, "ns does not exist: %s.%s", c->db, name);
   }
   if (!md_check_not_view(coll, error)) {
      return false;
   }
   bson_t **docs = malloc(coll->n_indexes * sizeof *docs);
   for (size_t i = 0; i < coll->n_indexes; i++) {
      docs[i] = bson_copy(coll->indexes[i]->spec);
   }
   char *ns = bson_strdup_printf("%s.%s", c->db, name);
   md_reply_first_batch(c, ns, docs, coll->n_indexes, batch_size, false);
   bson_free(ns);
   return true;
}

static bson_t *
collection_info(const md_coll_t *coll, bool name_only)
{
   bson_t *d = BCON_NEW("name", BCON_UTF8(coll->name), "type",
                        BCON_UTF8(coll->view_on ? "view" : "collection"));
   if (name_only) {
      return d;
   }
   bson_t info, id_index;
   if (coll->view_on) {
      bson_t options;
      BSON_APPEND_DOCUMENT_BEGIN(d, "options", &options);
      BSON_APPEND_UTF8(&options, "viewOn", coll->view_on);
      BSON_APPEND_ARRAY(&options, "pipeline", coll->view_pipeline);
      bson_append_document_end(d, &options);
      BSON_APPEND_DOCUMENT_BEGIN(d, "info", &info);
      BSON_APPEND_BOOL(&info, "readOnly", true);
      bson_append_document_end(d, &info);
      return d;
   }
   BSON_APPEND_DOCUMENT(d, "options", coll->options);
   BSON_APPEND_DOCUMENT_BEGIN(d, "info", &info);
   BSON_APPEND_BOOL(&info, "readOnly", false);
   bson_append_binary(&info, "uuid", 4, BSON_SUBTYPE_UUID, coll->uuid, 16);
   bson_append_document_end(d, &info);
   BSON_APPEND_DOCUMENT_BEGIN(d, "idIndex", &id_index);
   BSON_APPEND_INT32(&id_index, "v", 2);
   bson_t key;
   BSON_APPEND_DOCUMENT_BEGIN(&id_index, "key", &key);
   BSON_APPEND_INT32(&key, "_id", 1);
   bson_append_document_end(&id_index, &key);
   BSON_APPEND_UTF8(&id_index, "name", "_id_");
   bson_append_document_end(d, &id_index);
   return d;
}

typedef struct {
   tm_matcher_t *m;
   bool name_only;
   bson_t **docs;
   size_t n, cap;
} list_t;

/* Filters on the full description, even when only names are returned. */
static void
list_add(md_coll_t *coll, void *ctx)
{
   list_t *l = ctx;
   bson_t *full = collection_info(coll, false);
   if (tm_matcher_match(l->m, full, NULL)) {
      if (l->n == l->cap) {
         l->cap = l->cap ? 2 * l->cap : 8;
         l->docs = realloc(l->docs, l->cap * sizeof *l->docs);
      }
      l->docs[l->n++] = l->name_only ? collection_info(coll, true) : bson_copy(full);
   }
   bson_destroy(full);
}

bool
md_cmd_list_collections(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"filter", "nameOnly", "cursor", "authorizedCollections",
                                         NULL};
   bson_t filter, cursor;
   bool has_filter, found;
   bson_iter_t it;
   int64_t batch_size = 101;
   if (!md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "filter", &filter, &has_filter, error) ||
       !md_cmd_get_doc(c->cmd, "cursor", &cursor, &found, error) ||
       !md_cmd_get_int64(&cursor, "batchSize", &batch_size, error)) {
      return false;
   }
   bool name_only = bson_iter_init_find(&it, c->cmd, "nameOnly") && bson_iter_as_bool(&it);
   tm_matcher_t *m = tm_matcher_new(&filter, error);
   if (!m) {
      return false;
   }
   md_db_t *db = md_store_db(c->srv->data.store, c->db, false);
   list_t l = {.m = m, .name_only = name_only};
   for (md_coll_t *coll = db ? db->colls : NULL; coll; coll = coll->next) {
      md_coll_t *then = md_cmd_catalog_at(c, coll->name, coll); /* NULL: created since */
      if (then) {
         list_add(then, &l);
      }
   }
   md_cmd_catalog_gone(c, list_add, &l); /* dropped or renamed since the read position */
   size_t n = l.n;
   bson_t **docs = l.docs;
   tm_matcher_destroy(m);
   char *ns = bson_strdup_printf("%s.$cmd.listCollections", c->db);
   md_reply_first_batch(c, ns, docs, n, batch_size, false);
   bson_free(ns);
   return true;
}

static bool
split_ns(const char *ns, char *db, size_t db_size, const char **coll)
{
   const char *dot = strchr(ns, '.');
   if (!dot || dot == ns || !dot[1] || (size_t)(dot - ns) >= db_size) {
      return false;
   }
   memcpy(db, ns, (size_t)(dot - ns));
   db[dot - ns] = '\0';
   *coll = dot + 1;
   return true;
}

bool
md_cmd_rename_collection(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"to", "dropTarget", "stayTemp", NULL};
   bson_iter_t it;
   char from_db[256], to_db[256];
   const char *from_coll, *to_coll;
   if (strcmp(c->db, "admin") != 0) {
      return tm_error_set(error, 13,
                          "renameCollection may only be run against the admin "
                          "database.");
   }
   if (!md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   if (!BSON_ITER_HOLDS_UTF8(&it) ||
       !split_ns(bson_iter_utf8(&it, NULL), from_db, sizeof from_db, &from_coll) ||
       !bson_iter_init_find(&it, c->cmd, "to") || !BSON_ITER_HOLDS_UTF8(&it) ||
       !split_ns(bson_iter_utf8(&it, NULL), to_db, sizeof to_db, &to_coll)) {
      return tm_error_set(error, 73, "Invalid source or target namespace");
   }
   bool drop_target = bson_iter_init_find(&it, c->cmd, "dropTarget") && bson_iter_as_bool(&it);
   /* Both free at once: a transaction may take one while the rename waits for the other. */
   while (md_txns_using(&c->srv->data.txns, from_db, from_coll) ||
          md_txns_using(&c->srv->data.txns, to_db, to_coll)) {
      if (!md_cmd_wait_ddl(c, from_db, from_coll, error) ||
          !md_cmd_wait_ddl(c, to_db, to_coll, error)) {
         return false;
      }
   }
   md_coll_t *src = md_store_coll(c->srv->data.store, from_db, from_coll, false, NULL);
   if (!src) {
      return tm_error_set(error, 26, "Source collection %s.%s does not exist", from_db, from_coll);
   }
   md_coll_t *dst = md_store_coll(c->srv->data.store, to_db, to_coll, false, NULL);
   if (dst == src) {
      return tm_error_set(error, 20, "Can't rename a collection to itself");
   }
   if (dst && !drop_target) {
      return tm_error_set(error, 48, "target namespace exists");
   }
   if (dst) {
      drop_coll(c->srv, dst);
   }
   log_ddl(c->srv, MD_OP_RENAME, from_db, from_coll, to_db, to_coll);
   md_store_rename(c->srv->data.store, src, to_db, to_coll);
   return true;
}

bool
md_cmd_coll_mod(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"changeStreamPreAndPostImages",
                                         "validator",
                                         "validationLevel",
                                         "validationAction",
                                         "index",
                                         "expireAfterSeconds",
                                         "viewOn",
                                         "pipeline",
                                         NULL};
   static const char *const supported[] = {"changeStreamPreAndPostImages", "validator",
                                           "validationLevel", "validationAction", NULL};
   bson_iter_t it;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!md_cmd_wait_ddl(c, c->db, name, error)) {
      return false;
   }
   md_coll_t *coll = md_store_coll(c->srv->data.store, c->db, name, false, NULL);
   if (!coll) {
      return tm_error_set(error, 26, "ns does not exist: %s.%s", c->db, name);
   }
   if (bson_iter_init_find(&it, c->cmd, "changeStreamPreAndPostImages") &&
       !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return tm_error_set(error, 14,
                          "BSON field 'collMod.changeStreamPreAndPostImages' is the "
                          "wrong type, expected type 'object'");
   }
   if (!md_validator_check_options(c->cmd, "collMod", error)) {
      return false;
   }
   for (int i = 4; allowed[i]; i++) {
      if (bson_has_field(c->cmd, allowed[i])) {
         return tm_error_set(error, 2, "collMod option '%s' is not supported by test-mongod",
                             allowed[i]);
      }
   }
   /* Keep the collection's options as listCollections shows them: each given option
    * replaces the old value (checked above, so nothing changes on an error). */
   for (int i = 0; supported[i]; i++) {
      if (bson_iter_init_find(&it, c->cmd, supported[i])) {
         bson_t *options = bson_new();
         bson_copy_to_excluding_noinit(coll->options, options, supported[i], NULL);
         bson_append_value(options, supported[i], -1, bson_iter_value(&it));
         md_coll_set_options(coll, options);
      }
   }
   md_validator_install(coll);
   return true;
}
