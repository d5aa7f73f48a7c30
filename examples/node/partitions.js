// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The topic filters of a consumer instance that takes a set of the relay's partitions
// (relay/README.md, "Consumers that scale out", which states the grammar; the C consumer's
// examples/contacts-consumer/topics.c and the Python consumer's partitions.py follow the same
// one, all three tested against tests/fixtures/partition-sets.json).
//
// A set is one or more items separated by commas, each a partition N or a range N-M with
// N <= M, numbers in ASCII decimal digits below MAX_PARTITIONS, every partition at most once;
// no signs, spaces or empty items. With a set, the filter must hold "{partition}" exactly once;
// without one it must not hold it (an instance would otherwise subscribe to everything, or to
// nothing). No dependencies.
'use strict';

const MAX_PARTITIONS = 4096; // the relay's --partitions limit
const PLACEHOLDER = '{partition}';
const ITEM = /^([0-9]+)(?:-([0-9]+))?$/;

// The sorted partitions of `text`; throws an Error saying why when it is not a set.
function parseSet(text) {
  const parts = new Set();
  for (const item of text.split(',')) {
    const m = ITEM.exec(item);
    const lo = m ? Number(m[1]) : NaN;
    const hi = m ? Number(m[2] === undefined ? m[1] : m[2]) : NaN;
    if (!m || hi < lo || hi >= MAX_PARTITIONS) {
      throw new Error(`partition set '${text}': expected numbers and ranges below ` +
                      `${MAX_PARTITIONS}, each once, e.g. 0-7 or 0,2,5-6`);
    }
    for (let p = lo; p <= hi; p++) {
      if (parts.has(p)) throw new Error(`partition set '${text}' names a partition twice`);
      parts.add(p);
    }
  }
  return [...parts].sort((a, b) => a - b);
}

// The filters to subscribe to: `topic` alone without a set, else one per partition of the set
// `partitions` (a string such as "0-7,12"), "{partition}" replaced, in increasing order.
function filters(topic, partitions) {
  if (partitions === undefined || partitions === null) {
    if (topic.includes(PLACEHOLDER)) {
      throw new Error('the topic filter holds {partition}: give a partition set too');
    }
    return [topic];
  }
  if (topic.split(PLACEHOLDER).length !== 2) {
    throw new Error('a partition set needs a topic filter with one {partition}, e.g. ' +
                    'outbox/contacts/{partition}/#');
  }
  return parseSet(partitions).map((p) => topic.replace(PLACEHOLDER, String(p)));
}

module.exports = { MAX_PARTITIONS, parseSet, filters };
