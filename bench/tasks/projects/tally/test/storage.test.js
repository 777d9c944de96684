'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { loadTodos } = require('../src/storage');

test('loadTodos reads the todos of a file', () => {
  const todos = loadTodos(path.join(__dirname, 'fixtures', 'two.json'));
  assert.deepStrictEqual(todos.map((t) => t.title), ['Water the plants', 'Call the bank']);
});

test('a missing file is an empty list', () => {
  assert.deepStrictEqual(loadTodos(path.join(__dirname, 'fixtures', 'missing.json')), []);
});
