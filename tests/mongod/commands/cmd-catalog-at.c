/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The catalog as a member has applied it: create, drop and createIndexes reach a secondary
 * in history order, as MongoDB's secondaries apply those oplog entries (r6.0
 * src/mongo/db/repl/oplog.cpp). Explicit create and createIndexes get a no-op history entry
 * of their own (MongoDB logs them in its oplog), so a lagging or paused member sees them
 * only once it applied that point; listCollections and listIndexes answer at the member's
 * read position (data/versions.h keeps what the catalog was). Callers hold the server lock.
 */
#include "commands/commands.h"

void
md_cmd_catalog_note(md_cmd_t *c, const char *name)
{
   if (!c->txn && !md_cmd_branch(c)) {
      md_versions_catalog_note(&c->srv->data.versions, &c->srv->data.oplog, c->db, name);
   }
}

md_coll_t *
md_cmd_catalog_at(md_cmd_t *c, const char *name, md_coll_t *live)
{
   if (c->txn || md_cmd_branch(c) || c->srv->topo.n == 1) {
      return live;
   }
   return md_versions_catalog_at(&c->srv->data.versions, c->db, name, md_cmd_read_position(c),
                                 live);
}

void
md_cmd_catalog_gone(md_cmd_t *c, void (*fn)(md_coll_t *coll, void *ctx), void *ctx)
{
   if (c->txn || md_cmd_branch(c) || c->srv->topo.n == 1) {
      return;
   }
   md_versions_catalog_gone(&c->srv->data.versions, c->srv->data.store, c->db,
                            md_cmd_read_position(c), fn, ctx);
}
