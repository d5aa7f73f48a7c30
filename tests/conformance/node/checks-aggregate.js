'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Node checks of aggregation: the common stages, $lookup in its three forms, expressions
 * with variables and the array / accumulator-style operators, the command's `let`, and
 * which names are unknown (168).
 */
exports.register = ({ check, assert, mongodb, serverError }) => {
  const { Long } = mongodb;

  async function orders(ctx) {
    const o = await ctx.coll('agg_orders');
    const items = await ctx.coll('agg_items');
    await o.insertMany([{ _id: 1, min: 2, tags: ['a', 'b'] }, { _id: 2, min: 9, tags: ['b'] }]);
    await items.insertMany([{ _id: 10, order: 1, q: 5 }, { _id: 11, order: 1, q: 1 },
      { _id: 12, order: 2, q: 7 }]);
    return { o, items };
  }

  check('aggregate: match, group, sort, project, unwind, count, skip, limit', async (ctx) => {
    const { o, items } = await orders(ctx);
    const g = await items.aggregate([{ $match: { q: { $gt: 0 } } },
      { $group: { _id: '$order', total: { $sum: '$q' }, n: { $count: {} },
        qs: { $push: '$q' }, hi: { $max: '$q' } } },
      { $sort: { _id: 1 } }]).toArray();
    assert.deepEqual(g, [{ _id: 1, total: 6, n: 2, qs: [5, 1], hi: 5 },
      { _id: 2, total: 7, n: 1, qs: [7], hi: 7 }]);
    const tags = await o.aggregate([{ $unwind: '$tags' }, { $group: { _id: '$tags',
      n: { $sum: 1 } } }, { $sort: { n: -1, _id: 1 } }, { $skip: 0 }, { $limit: 1 }])
      .toArray();
    assert.deepEqual(tags, [{ _id: 'b', n: 2 }]);
    assert.deepEqual(await o.aggregate([{ $count: 'n' }]).toArray(), [{ n: 2 }]);
    assert.equal(await o.countDocuments({ min: { $lt: 5 } }), 1);
  });

  check('aggregate: $lookup by equality', async (ctx) => {
    const { o, items } = await orders(ctx);
    const r = await o.aggregate([{ $lookup: { from: items.collectionName, localField: '_id',
      foreignField: 'order', as: 'its' } }, { $project: { n: { $size: '$its' } } }]).toArray();
    assert.deepEqual(r, [{ _id: 1, n: 2 }, { _id: 2, n: 1 }]);
  });

  check('aggregate: $lookup with let and a pipeline', async (ctx) => {
    const { o, items } = await orders(ctx);
    const r = await o.aggregate([{ $lookup: { from: items.collectionName,
      let: { oid: '$_id', m: '$min' },
      pipeline: [{ $match: { $expr: { $and: [{ $eq: ['$order', '$$oid'] },
        { $gte: ['$q', '$$m'] }] } } }, { $project: { _id: 1 } }],
      as: 'big' } }, { $project: { big: 1 } }]).toArray();
    assert.deepEqual(r, [{ _id: 1, big: [{ _id: 10 }] }, { _id: 2, big: [] }]);
  });

  check('aggregate: $lookup with localField/foreignField and a pipeline', async (ctx) => {
    const { o, items } = await orders(ctx);
    const r = await o.aggregate([{ $match: { _id: 1 } }, { $lookup: {
      from: items.collectionName, localField: '_id', foreignField: 'order',
      pipeline: [{ $sort: { q: 1 } }, { $project: { _id: 0, q: 1 } }], as: 'qs' } }])
      .toArray();
    assert.deepEqual(r[0].qs, [{ q: 1 }, { q: 5 }]);
  });

  check('aggregate: $lookup argument errors are 9 FailedToParse', async (ctx) => {
    const { o, items } = await orders(ctx);
    await serverError(o.aggregate([{ $lookup: { from: items.collectionName, as: 'x' } }])
      .toArray(), 9);
    await serverError(o.aggregate([{ $lookup: { from: items.collectionName, localField: 'a',
      foreignField: 'b' } }]).toArray(), 9);
  });

  check('aggregate: $slice $first $last $filter $map $reduce $let', async (ctx) => {
    const c = await ctx.coll('agg_arrays');
    await c.insertOne({ _id: 1, a: [3, 1, 2], o: [{ v: 'x' }, { v: 'y' }] });
    const [d] = await c.aggregate([{ $project: { _id: 0,
      s2: { $slice: ['$a', 2] }, s3: { $slice: ['$a', -2, 1] },
      first: { $first: '$a' }, last: { $last: '$o.v' },
      filter: { $filter: { input: '$a', as: 'x', cond: { $gt: ['$$x', 1] } } },
      limited: { $filter: { input: '$a', cond: { $gte: ['$$this', 1] }, limit: 2 } },
      map: { $map: { input: '$o', in: { $concat: ['$$this.v', '!'] } } },
      reduce: { $reduce: { input: '$a', initialValue: 0, in: { $add: ['$$value', '$$this'] } } },
      let: { $let: { vars: { n: { $size: '$a' } }, in: { $multiply: ['$$n', 2] } } } } }])
      .toArray();
    assert.deepEqual(d, { s2: [3, 1], s3: [1], first: 3, last: 'y', filter: [3, 2],
      limited: [3, 1], map: ['x!', 'y!'], reduce: 6, let: 6 });
  });

  check('aggregate: $max $min $sum $avg in array and accumulator-style forms', async (ctx) => {
    const c = await ctx.coll('agg_accstyle');
    await c.insertOne({ _id: 1, a: [3, 9, 2], n: null });
    const [d] = await c.aggregate([{ $project: { _id: 0,
      maxArr: { $max: '$a' }, minArr: { $min: '$a' }, maxArgs: { $max: [4, '$n', 1] },
      minNone: { $min: ['$n', '$missing'] }, sum: { $sum: '$a' }, sumArgs: { $sum: [1, 2.5] },
      avg: { $avg: '$a' } } }]).toArray();
    assert.deepEqual(d, { maxArr: 9, minArr: 2, maxArgs: 4, minNone: null, sum: 14,
      sumArgs: 3.5, avg: 14 / 3 });
  });

  check('aggregate: $mergeObjects (expression and accumulator), $toLong', async (ctx) => {
    const c = await ctx.coll('agg_merge');
    await c.insertMany([{ _id: 1, g: 1, o: { a: 1, b: 1 }, s: '42' },
      { _id: 2, g: 1, o: { b: 2 }, s: '7' }]);
    const [e] = await c.aggregate([{ $match: { _id: 1 } }, { $project: { _id: 0,
      m: { $mergeObjects: ['$o', { c: 3 }, null] }, l: { $toLong: '$s' } } }],
    { promoteLongs: false }).toArray();
    assert.deepEqual(e.m, { a: 1, b: 1, c: 3 });
    assert.ok(e.l instanceof Long && e.l.toNumber() === 42);
    const [g] = await c.aggregate([{ $group: { _id: '$g', m: { $mergeObjects: '$o' } } }])
      .toArray();
    assert.deepEqual(g, { _id: 1, m: { a: 1, b: 2 } });
    await serverError(c.aggregate([{ $project: { x: { $toLong: 'nope' } } }]).toArray(), 241);
    await serverError(c.aggregate([{ $project: { x: { $mergeObjects: ['$s'] } } }]).toArray(),
      40400);
  });

  check('aggregate: the command\'s let', async (ctx) => {
    const { o } = await orders(ctx);
    const r = await o.aggregate([{ $match: { $expr: { $eq: ['$_id', '$$want'] } } },
      { $project: { _id: 1 } }], { let: { want: 2 } }).toArray();
    assert.deepEqual(r, [{ _id: 2 }]);
  });

  check('aggregate: unknown names (168 for expressions, 40324 for stages)', async (ctx) => {
    const { o } = await orders(ctx);
    const e = await serverError(o.aggregate([{ $project: { x: { $noSuchOperator: 1 } } }])
      .toArray(), 168);
    assert.equal(e.codeName, 'InvalidPipelineOperator');
    await serverError(o.aggregate([{ $project: { x: { $push: '$a' } } }]).toArray(), 168);
    await serverError(o.aggregate([{ $noSuchStage: {} }]).toArray(), 40324);
    await serverError(o.aggregate([{ $group: { _id: null, x: { $noSuch: 1 } } }]).toArray(),
      15952);
    await serverError(o.find({ a: { $noSuch: 1 } }).toArray(), 2);
    await serverError(o.aggregate([{ $project: { x: '$$undefinedVariable' } }]).toArray(),
      17276);
  });
};
