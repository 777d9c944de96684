'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { add, complete, remove, pending } = require('../src/todos');

test('add numbers todos after the highest id', () => {
  const todos = [{ id: 7, title: 'old', done: true, created: '2026-03-01' }];
  assert.strictEqual(add(todos, '  Buy stamps ', new Date('2026-03-02')), 8);
  assert.deepStrictEqual(todos[1], { id: 8, title: 'Buy stamps', done: false, created: '2026-03-02' });
});

test('add refuses an empty title', () => {
  assert.throws(() => add([], '   '));
});

test('complete and remove find todos by id', () => {
  const todos = [];
  const a = add(todos, 'a');
  const b = add(todos, 'b');
  assert.ok(complete(todos, a));
  assert.ok(!complete(todos, 99));
  assert.deepStrictEqual(pending(todos).map((t) => t.id), [b]);
  assert.strictEqual(remove(todos, b).title, 'b');
  assert.strictEqual(remove(todos, b), null);
});
