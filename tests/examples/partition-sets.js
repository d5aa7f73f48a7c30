// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The Node consumer's partition sets (examples/node/partitions.js) against the shared vectors
// of tests/fixtures/partition-sets.json, which the C and Python consumers' tests load too
// (issue 33). usage: node partition-sets.js VECTORS.json
'use strict';
const fs = require('fs');
const path = require('path');
const partitions = require(path.join(__dirname, '..', '..', 'examples', 'node', 'partitions.js'));

const vectors = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const failures = [];
const expected = (c) => (c.partitions === null ? [c.filter]
  : c.partitions.flatMap(([lo, hi]) => Array.from({ length: hi - lo + 1 },
    (_, k) => c.filter.replace('{partition}', String(lo + k)))));

if (vectors.max_partitions !== partitions.MAX_PARTITIONS) {
  failures.push(`MAX_PARTITIONS ${partitions.MAX_PARTITIONS}, vectors say ${vectors.max_partitions}`);
}
for (const c of vectors.cases) {
  const what = `filter ${JSON.stringify(c.filter)} set ${JSON.stringify(c.set)}`;
  let got;
  try {
    got = partitions.filters(c.filter, c.set);
  } catch (err) {
    if (c.valid) failures.push(`${what} refused: ${err.message}`);
    else if (!err.message) failures.push(`${what} refused without a message`);
    continue;
  }
  if (!c.valid) failures.push(`${what} accepted (${got.length} filters): ${c.why}`);
  else if (JSON.stringify(got) !== JSON.stringify(expected(c))) {
    failures.push(`${what} gave ${got.slice(0, 8)}`);
  }
}
for (const f of failures) console.log(`FAIL: ${f}`);
console.log(`${vectors.cases.length} cases, ${failures.length} failures`);
process.exit(failures.length ? 1 : 0);
