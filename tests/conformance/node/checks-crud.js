'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Node checks of reads and writes: CRUD, bulkWrite (ordered and not), update operators and
 * arrayFilters, findOneAnd*, duplicate keys, indexes and hints (a partial index that cannot
 * answer the query is still scanned, as mongod 6.0 does).
 */
exports.register = ({ check, assert, mongodb, serverError }) => {
  const { MongoBulkWriteError } = mongodb;

  check('crud: insert, find with filter, sort, projection, skip, limit', async (ctx) => {
    const coll = await ctx.coll('crud_find');
    const r = await coll.insertMany([{ _id: 1, g: 'a', n: 3 }, { _id: 2, g: 'b', n: 1 },
      { _id: 3, g: 'a', n: 2 }]);
    assert.equal(r.insertedCount, 3);
    const docs = await coll.find({ g: 'a' }, { sort: { n: 1 }, projection: { _id: 1 } }).toArray();
    assert.deepEqual(docs, [{ _id: 3 }, { _id: 1 }]);
    const page = await coll.find({}).sort({ _id: -1 }).skip(1).limit(1).toArray();
    assert.deepEqual(page, [{ _id: 2, g: 'b', n: 1 }]);
    assert.equal(await coll.countDocuments({ n: { $gte: 2 } }), 2);
    assert.equal(await coll.estimatedDocumentCount(), 3);
    assert.deepEqual((await coll.distinct('g')).sort(), ['a', 'b']);
  });

  check('crud: cursors over several batches', async (ctx) => {
    const coll = await ctx.coll('crud_batches');
    await coll.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i })));
    const ids = (await coll.find({}, { batchSize: 7 }).toArray()).map((d) => d._id);
    assert.equal(ids.length, 250);
    assert.deepEqual(ids.slice(0, 3), [0, 1, 2]);
    const it = coll.find({}).batchSize(100);
    let n = 0;
    for await (const doc of it) {
      n += doc._id === n ? 1 : 0;
    }
    assert.equal(n, 250);
  });

  check('crud: updates, upserts, replace, delete', async (ctx) => {
    const coll = await ctx.coll('crud_update');
    await coll.insertMany([{ _id: 1, n: 1 }, { _id: 2, n: 1 }]);
    let r = await coll.updateOne({ _id: 1 }, { $inc: { n: 1 }, $set: { s: 'x' } });
    assert.deepEqual([r.matchedCount, r.modifiedCount], [1, 1]);
    r = await coll.updateMany({}, { $set: { s: 'x' } });
    assert.deepEqual([r.matchedCount, r.modifiedCount], [2, 1]);
    r = await coll.updateOne({ _id: 3 }, { $setOnInsert: { created: true } }, { upsert: true });
    assert.deepEqual([r.upsertedCount, r.upsertedId], [1, 3]);
    r = await coll.replaceOne({ _id: 2 }, { replaced: true });
    assert.equal(r.modifiedCount, 1);
    assert.deepEqual(await coll.findOne({ _id: 2 }), { _id: 2, replaced: true });
    assert.equal((await coll.deleteMany({ s: 'x' })).deletedCount, 1);
    assert.equal((await coll.deleteOne({})).deletedCount, 1);
    assert.equal(await coll.countDocuments({}), 1);
  });

  check('crud: array operators ($push $each $slice, $pull, $addToSet, $)', async (ctx) => {
    const coll = await ctx.coll('crud_arrays');
    await coll.insertOne({ _id: 1, a: [1, 2], ev: [{ id: 'a', s: 0 }, { id: 'b', s: 0 }] });
    await coll.updateOne({ _id: 1 }, { $push: { a: { $each: [3, 4], $slice: -3 } } });
    await coll.updateOne({ _id: 1 }, { $addToSet: { a: 4 } });
    await coll.updateOne({ _id: 1, 'ev.id': 'b' }, { $set: { 'ev.$.s': 5 } });
    await coll.updateOne({ _id: 1 }, { $pull: { ev: { id: 'a' } } });
    assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, a: [2, 3, 4],
      ev: [{ id: 'b', s: 5 }] });
  });

  check('crud: arrayFilters update the matching elements', async (ctx) => {
    const coll = await ctx.coll('crud_array_filters');
    await coll.insertOne({ _id: 1, ev: [{ k: 1, s: 0 }, { k: 2, s: 0 }, { k: 3, s: 0 }] });
    const r = await coll.updateOne({ _id: 1 }, { $set: { 'ev.$[e].s': 1 } },
      { arrayFilters: [{ 'e.k': { $in: [1, 3] } }] });
    assert.equal(r.modifiedCount, 1);
    assert.deepEqual((await coll.findOne({ _id: 1 })).ev.map((e) => e.s), [1, 0, 1]);
    await serverError(coll.updateOne({ _id: 1 }, { $set: { 'ev.$[e].s': 1 } },
      { arrayFilters: [{ 'e.k': 1 }, { 'x.k': 1 }] }), 9);
  });

  check('bulkWrite: ordered, mixed operations with arrayFilters', async (ctx) => {
    const coll = await ctx.coll('bulk_ordered');
    const r = await coll.bulkWrite([
      { insertOne: { document: { _id: 1, ev: [{ k: 1 }, { k: 2 }] } } },
      { insertOne: { document: { _id: 2 } } },
      { updateOne: { filter: { _id: 1 }, update: { $set: { 'ev.$[e].done': true } },
        arrayFilters: [{ 'e.k': 2 }] } },
      { updateMany: { filter: {}, update: { $inc: { v: 1 } } } },
      { replaceOne: { filter: { _id: 2 }, replacement: { r: 1 } } },
      { deleteOne: { filter: { _id: 3 } } },
      { updateOne: { filter: { _id: 4 }, update: { $set: { u: 1 } }, upsert: true } },
    ]);
    assert.deepEqual([r.insertedCount, r.matchedCount, r.modifiedCount, r.deletedCount,
      r.upsertedCount], [2, 4, 4, 0, 1]);
    assert.deepEqual((await coll.findOne({ _id: 1 })).ev, [{ k: 1 }, { k: 2, done: true }]);
  });

  check('bulkWrite: an ordered batch stops at the first duplicate key', async (ctx) => {
    const coll = await ctx.coll('bulk_dup');
    let error;
    try {
      await coll.insertMany([{ _id: 1 }, { _id: 1 }, { _id: 2 }]);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof MongoBulkWriteError);
    assert.equal(error.code, 11000);
    assert.equal(error.insertedCount, 1);
    assert.equal(error.writeErrors[0].index, 1);
    assert.deepEqual(await coll.countDocuments({}), 1);
  });

  check('bulkWrite: an unordered batch continues past errors', async (ctx) => {
    const coll = await ctx.coll('bulk_unordered');
    let error;
    try {
      await coll.insertMany([{ _id: 1 }, { _id: 1 }, { _id: 2 }], { ordered: false });
    } catch (e) {
      error = e;
    }
    assert.equal(error.insertedCount, 2);
    assert.equal(await coll.countDocuments({}), 2);
  });

  check('duplicate key: 11000 with keyPattern, keyValue and mongod\'s message', async (ctx) => {
    const coll = await ctx.coll('dup_key');
    await coll.insertOne({ _id: 1 });
    const e = await serverError(coll.insertOne({ _id: 1 }), 11000);
    assert.deepEqual(e.keyPattern, { _id: 1 });
    assert.deepEqual(e.keyValue, { _id: 1 });
    assert.match(e.message, /^E11000 duplicate key error collection: \S+\.dup_key index: _id_ dup key: \{ _id: 1 \}/);
  });

  check('findOneAndUpdate / Replace / Delete', async (ctx) => {
    const coll = await ctx.coll('fam');
    await coll.insertMany([{ _id: 1, n: 1 }, { _id: 2, n: 5 }]);
    const before = await coll.findOneAndUpdate({ n: { $gte: 1 } }, { $inc: { n: 10 } },
      { sort: { n: -1 }, projection: { n: 1 } });
    assert.deepEqual(before, { _id: 2, n: 5 });
    const after = await coll.findOneAndUpdate({ _id: 3 }, { $set: { n: 0 } },
      { upsert: true, returnDocument: 'after' });
    assert.deepEqual(after, { _id: 3, n: 0 });
    const meta = await coll.findOneAndUpdate({ _id: 9 }, { $set: { n: 1 } },
      { includeResultMetadata: true });
    assert.equal(meta.value, null);
    assert.equal(meta.lastErrorObject.updatedExisting, false);
    const replaced = await coll.findOneAndReplace({ _id: 1 }, { r: true },
      { returnDocument: 'after' });
    assert.deepEqual(replaced, { _id: 1, r: true });
    assert.deepEqual(await coll.findOneAndDelete({ _id: 1 }), { _id: 1, r: true });
    assert.equal(await coll.countDocuments({}), 2);
  });

  check('indexes: create, list, unique partial, conflicts, drop', async (ctx) => {
    const coll = await ctx.coll('indexes');
    await coll.createIndex({ k: 1 }, { unique: true, name: 'k_unique',
      partialFilterExpression: { live: true } });
    const names = (await coll.listIndexes().toArray()).map((i) => i.name);
    assert.deepEqual(names, ['_id_', 'k_unique']);
    await coll.insertMany([{ k: 1, live: true }, { k: 1 }, { k: 1 }]);
    await serverError(coll.insertOne({ k: 1, live: true }), 11000);
    await serverError(coll.createIndex({ other: 1 }, { name: 'k_unique' }), 86);
    await coll.dropIndex('k_unique');
    assert.equal((await coll.listIndexes().toArray()).length, 1);
  });

  check('ddl: create, listCollections, rename, drop, dropDatabase', async (ctx) => {
    const db = ctx.client.db('outbox_node_checks_ddl');
    await db.dropDatabase();
    await db.createCollection('a');
    await serverError(db.createCollection('a'), 48);
    await db.collection('a').insertOne({ _id: 1 });
    assert.deepEqual((await db.listCollections({}, { nameOnly: true }).toArray())
      .map((c) => c.name), ['a']);
    await db.renameCollection('a', 'b');
    assert.deepEqual(await db.collection('b').findOne({}), { _id: 1 });
    const dbs = (await ctx.admin.command({ listDatabases: 1, nameOnly: true })).databases;
    assert.ok(dbs.some((d) => d.name === 'outbox_node_checks_ddl'));
    assert.equal(await db.collection('b').drop(), true);
    await serverError(db.command({ drop: 'b' }), 26);
    await db.dropDatabase();
  });

  check('views: a view answers reads and refuses writes with 166', async (ctx) => {
    const base = await ctx.coll('view_base');
    await ctx.coll('view_big');
    await base.insertMany([{ _id: 1, n: 1 }, { _id: 2, n: 5 }]);
    await ctx.db.createCollection('view_big', { viewOn: 'view_base',
      pipeline: [{ $match: { n: { $gt: 2 } } }] });
    const view = ctx.db.collection('view_big');
    assert.deepEqual(await view.find({}).toArray(), [{ _id: 2, n: 5 }]);
    await serverError(view.insertOne({ _id: 3 }), 166);
  });

  check('cursors: close kills the server cursor (getMore then 43)', async (ctx) => {
    const coll = await ctx.coll('cursor_kill');
    await coll.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })));
    const r = await ctx.db.command({ find: coll.collectionName, batchSize: 2 },
      { promoteLongs: false });
    const id = r.cursor.id;
    assert.ok(id instanceof mongodb.Long && !id.isZero());
    const killed = await ctx.db.command({ killCursors: coll.collectionName, cursors: [id] });
    assert.equal(killed.cursorsKilled.length, 1);
    await serverError(ctx.db.command({ getMore: id, collection: coll.collectionName }), 43);
  });

  check('hint: an unknown index is 2, a known one is used', async (ctx) => {
    const coll = await ctx.coll('hint_basic');
    await coll.insertMany([{ _id: 1, a: 1 }, { _id: 2 }]);
    await coll.createIndex({ a: 1 });
    assert.equal((await coll.find({}).hint({ a: 1 }).toArray()).length, 2);
    await serverError(coll.find({}).hint('nope_1').toArray(), 2);
  });

  check('hint: a partial index that cannot answer is scanned anyway (no error, not all)', async (ctx) => {
    const coll = await ctx.coll('hint_partial');
    await coll.insertMany([{ _id: 1, x: 100 }, { _id: 2, x: 100, y: 1 }]);
    await coll.createIndex({ x: 1 }, { name: 'x_partial',
      partialFilterExpression: { y: { $exists: true } } });
    assert.deepEqual((await coll.find({ x: 100 }).toArray()).map((d) => d._id), [1, 2]);
    assert.deepEqual((await coll.find({ x: 100 }).hint('x_partial').toArray()).map((d) => d._id),
      [2]);
    assert.equal(await coll.countDocuments({ x: 100 }, { hint: 'x_partial' }), 1);
  });

  check('hint: the relay\'s sweep through its partial index finds every pending document', async (ctx) => {
    const coll = await ctx.coll('hint_outbox_pending');
    await coll.createIndex({ eventSeq: 1 }, { name: 'outbox_pending',
      partialFilterExpression: { 'events.0': { $exists: true } } });
    await coll.insertMany([{ _id: 1, eventSeq: 1, events: [{ seq: 1 }] },
      { _id: 2, eventSeq: 2, events: [] }, { _id: 3, eventSeq: 3, events: [{ seq: 3 }] }]);
    const found = await coll.find({ 'events.0': { $exists: true } }).hint('outbox_pending')
      .toArray();
    assert.deepEqual(found.map((d) => d._id), [1, 3]);
  });
};
