'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { parseDuration, formatDuration } = require('../duration.js');

test('parses a single unit', () => {
  assert.strictEqual(parseDuration('90s'), 90);
});

test('parses hours and minutes', () => {
  assert.strictEqual(parseDuration('1h30m'), 5400);
});

test('formats without zero parts', () => {
  assert.strictEqual(formatDuration(5400), '1h30m');
});
