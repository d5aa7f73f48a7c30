'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Node checks of change streams: event shapes, updateDescription as the oplog records it
 * (arrayFilters on several elements give the whole array), fullDocument modes and images,
 * resuming (tokens, startAfter, startAtOperationTime, after errors), and the errors that
 * must not be resumed (47 missing required images, 280 foreign tokens, labelled).
 */
exports.register = ({ check, assert, mongodb, serverError, eventually }) => {
  const { Timestamp } = mongodb;

  /* Opens a stream and waits until its aggregate ran, so no later write is missed (an event
   * that first call already returned is kept for next()). */
  async function watch(coll, pipeline = [], options = {}) {
    const stream = coll.watch(pipeline, { maxAwaitTimeMS: 300, ...options });
    stream.pending = await stream.tryNext();
    return stream;
  }

  async function next(stream, ms = 20000) {
    if (stream.pending) {
      const ev = stream.pending;
      stream.pending = null;
      return ev;
    }
    return eventually(() => stream.tryNext(), ms, 'a change event');
  }

  check('streams: insert, update, replace, delete event shapes', async (ctx) => {
    const coll = await ctx.coll('cs_shapes');
    const stream = await watch(coll);
    await coll.insertOne({ _id: 1, a: 1 });
    await coll.updateOne({ _id: 1 }, { $set: { a: 2 } });
    await coll.replaceOne({ _id: 1 }, { b: 1 });
    await coll.deleteOne({ _id: 1 });
    const ins = await next(stream);
    assert.deepEqual(Object.keys(ins), ['_id', 'operationType', 'clusterTime', 'wallTime',
      'fullDocument', 'ns', 'documentKey']);
    assert.ok(ins.clusterTime instanceof Timestamp && ins.wallTime instanceof Date);
    assert.match(ins._id._data, /^82[0-9A-F]{16}/);
    assert.deepEqual(ins.ns, { db: ctx.db.databaseName, coll: 'cs_shapes' });
    const upd = await next(stream);
    assert.deepEqual(upd.updateDescription, { updatedFields: { a: 2 }, removedFields: [],
      truncatedArrays: [] });
    assert.equal((await next(stream)).operationType, 'replace');
    const del = await next(stream);
    assert.deepEqual([del.operationType, del.documentKey], ['delete', { _id: 1 }]);
    await stream.close();
  });

  check('streams: updateDescription as the server logs it (incl. arrayFilters)', async (ctx) => {
    const coll = await ctx.coll('cs_descriptions');
    await coll.insertOne({ _id: 1, ev: [{ k: 1, s: 0 }, { k: 2, s: 0 }, { k: 3, s: 0 }], t: [1] });
    const stream = await watch(coll);
    await coll.updateOne({ _id: 1 }, { $push: { t: 2 } });
    await coll.updateOne({ _id: 1 }, { $pull: { t: 1 } });
    await coll.updateOne({ _id: 1 }, { $set: { 'ev.$[e].s': 1 } },
      { arrayFilters: [{ 'e.k': { $in: [1, 3] } }] });
    await coll.updateOne({ _id: 1 }, { $set: { 'ev.$[e].s': 2 } }, { arrayFilters: [{ 'e.k': 2 }] });
    await coll.updateOne({ _id: 1 }, { $set: { 'ev.$[e].s': 1 } },
      { arrayFilters: [{ 'e.s': { $gte: 1 } }] });
    await coll.updateOne({ _id: 1 }, { $unset: { t: '' } });
    const fields = [];
    for (let i = 0; i < 6; i++) {
      fields.push((await next(stream)).updateDescription);
    }
    assert.deepEqual(fields[0].updatedFields, { 't.1': 2 });
    assert.deepEqual(fields[1].updatedFields, { t: [2] });
    assert.deepEqual(fields[2].updatedFields, { ev: [{ k: 1, s: 1 }, { k: 2, s: 0 },
      { k: 3, s: 1 }] });
    assert.deepEqual(fields[3].updatedFields, { 'ev.1.s': 2 });
    assert.deepEqual(fields[4].updatedFields, { 'ev.1': { k: 2, s: 1 } });
    assert.deepEqual(fields[5].removedFields, ['t']);
    await stream.close();
  });

  check('streams: fullDocument updateLookup and $match on operationType', async (ctx) => {
    const coll = await ctx.coll('cs_lookup');
    await coll.insertOne({ _id: 1, n: 0 });
    const stream = await watch(coll, [{ $match: { operationType: 'update' } }],
      { fullDocument: 'updateLookup' });
    await coll.insertOne({ _id: 2 });
    await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } });
    const ev = await next(stream);
    assert.deepEqual([ev.operationType, ev.fullDocument], ['update', { _id: 1, n: 1 }]);
    await stream.close();
  });

  check('streams: pre- and post-images when the collection records them', async (ctx) => {
    await ctx.coll('cs_images');
    const coll = await ctx.db.createCollection('cs_images',
      { changeStreamPreAndPostImages: { enabled: true } });
    await coll.insertOne({ _id: 1, n: 0 });
    const stream = await watch(coll, [], { fullDocument: 'required',
      fullDocumentBeforeChange: 'required' });
    await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } });
    const ev = await next(stream);
    assert.deepEqual([ev.fullDocumentBeforeChange, ev.fullDocument],
      [{ _id: 1, n: 0 }, { _id: 1, n: 1 }]);
    await stream.close();
  });

  for (const [option, write] of [['fullDocumentBeforeChange', 'delete'], ['fullDocument', 'update']]) {
    check(`streams: ${option}: 'required' without images is 47 at the event`, async (ctx) => {
      const coll = await ctx.coll(`cs_required_${option}`);
      await coll.insertOne({ _id: 1, n: 0 });
      const stream = await watch(coll, [], { [option]: 'required' });
      if (write === 'delete') {
        await coll.deleteOne({ _id: 1 });
      } else {
        await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } });
      }
      const e = await serverError(next(stream), 47);
      assert.equal(e.codeName, 'NoMatchingDocument');
      assert.ok(!e.hasErrorLabel('ResumableChangeStreamError'));
      await stream.close().catch(() => {});
    });
  }

  check('streams: resumeAfter, startAfter and startAtOperationTime', async (ctx) => {
    const coll = await ctx.coll('cs_resume');
    const stream = await watch(coll);
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
    const first = await next(stream);
    await stream.close();
    const resumed = await watch(coll, [], { resumeAfter: first._id });
    assert.deepEqual([(await next(resumed)).documentKey, (await next(resumed)).documentKey],
      [{ _id: 2 }, { _id: 3 }]);
    await resumed.close();
    const after = await watch(coll, [], { startAfter: first._id });
    assert.deepEqual((await next(after)).documentKey, { _id: 2 });
    await after.close();
    const at = await watch(coll, [], { startAtOperationTime: first.clusterTime });
    assert.deepEqual((await next(at)).documentKey, { _id: 1 });
    await at.close();
  });

  check('streams: resume after a resumable getMore error loses and repeats nothing', async (ctx) => {
    const coll = await ctx.coll('cs_auto_resume');
    const stream = await watch(coll);
    await coll.insertOne({ _id: 1 });
    assert.deepEqual((await next(stream)).documentKey, { _id: 1 });
    await ctx.admin.command({ configureFailPoint: 'failGetMoreAfterCursorCheckout',
      mode: { times: 1 }, data: { errorCode: 6 } });
    await coll.insertMany([{ _id: 2 }, { _id: 3 }]);
    const ids = [(await next(stream)).documentKey._id, (await next(stream)).documentKey._id];
    assert.deepEqual(ids, [2, 3]);
    await stream.close();
  });

  check('streams: another collection\'s token is 280, NonResumableChangeStreamError', async (ctx) => {
    const coll = await ctx.coll('cs_foreign_token');
    const other = await ctx.coll('cs_foreign_token_other');
    const s = await watch(other);
    await other.insertOne({ _id: 1 });
    const token = (await next(s))._id;
    await s.close();
    await coll.insertOne({ _id: 2 });
    const stream = coll.watch([], { resumeAfter: token });
    const e = await serverError(stream.tryNext(), 280, ['NonResumableChangeStreamError']);
    assert.ok(!e.hasErrorLabel('ResumableChangeStreamError'));
    await stream.close().catch(() => {});
  });

  check('streams: database and cluster streams see every collection', async (ctx) => {
    const a = await ctx.coll('cs_db_a');
    const b = await ctx.coll('cs_db_b');
    const dbStream = ctx.db.watch([], { maxAwaitTimeMS: 300 });
    const cluster = ctx.client.watch([], { maxAwaitTimeMS: 300 });
    dbStream.pending = await dbStream.tryNext();
    cluster.pending = await cluster.tryNext();
    await a.insertOne({ _id: 1 });
    await b.insertOne({ _id: 2 });
    for (const s of [dbStream, cluster]) {
      const colls = [(await next(s)).ns.coll, (await next(s)).ns.coll];
      assert.deepEqual(colls, ['cs_db_a', 'cs_db_b']);
      await s.close();
    }
  });

  check('streams: the resume token follows empty batches (postBatchResumeToken)', async (ctx) => {
    const coll = await ctx.coll('cs_pbrt');
    const stream = await watch(coll);
    const t0 = stream.resumeToken;
    assert.ok(t0 && t0._data, 'a token before any event');
    await ctx.coll('cs_pbrt_other').then((o) => o.insertOne({ _id: 1 }));
    const moved = await eventually(async () => {
      await stream.tryNext();
      return stream.resumeToken._data > t0._data;
    }, 20000, 'the token to advance');
    assert.ok(moved);
    await stream.close();
  });

  check('streams: drop invalidates; resumeAfter the invalidate is 260', async (ctx) => {
    const coll = await ctx.coll('cs_drop');
    await coll.insertOne({ _id: 1 });
    const stream = await watch(coll);
    await coll.drop();
    assert.equal((await next(stream)).operationType, 'drop');
    const inv = await next(stream);
    assert.equal(inv.operationType, 'invalidate');
    await stream.close().catch(() => {});
    const again = coll.watch([], { resumeAfter: inv._id });
    await serverError(again.tryNext(), 260);
    await again.close().catch(() => {});
  });
};
