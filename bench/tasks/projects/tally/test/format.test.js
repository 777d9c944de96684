'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { formatTodo, formatList, truncate, MAX_TITLE_LENGTH } = require('../src/format');

test('short titles are kept whole', () => {
  const title = 'x'.repeat(MAX_TITLE_LENGTH);
  assert.strictEqual(truncate(title), title);
});

test('long titles are cut to MAX_TITLE_LENGTH, ending with an ellipsis', () => {
  const cut = truncate('a'.repeat(MAX_TITLE_LENGTH + 10));
  assert.strictEqual(cut.length, MAX_TITLE_LENGTH);
  assert.ok(cut.endsWith('…'));
});

test('a todo shows its id and a box', () => {
  assert.strictEqual(formatTodo({ id: 3, title: 'Buy stamps', done: true }), '  3 [x] Buy stamps');
  assert.strictEqual(formatList([]), 'nothing to do');
});
