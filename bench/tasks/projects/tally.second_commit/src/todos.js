'use strict';

// The to-do list itself: an array of { id, title, done, created }.

function nextId(todos) {
  return todos.reduce((max, t) => Math.max(max, t.id), 0) + 1;
}

// Adds a todo with this title to the list and returns the new todo's id.
function add(todos, title, now = new Date()) {
  const text = title.trim();
  if (!text) throw new Error('a todo needs a title');
  const id = nextId(todos);
  todos.push({ id, title: text, done: false, created: now.toISOString().slice(0, 10) });
  return id;
}

// Marks the todo with this id as done; false when there is none.
function complete(todos, id) {
  const todo = todos.find((t) => t.id === id);
  if (!todo) return false;
  todo.done = true;
  return true;
}

// Takes the todo with this id out of the list and returns it (null when there is none).
function remove(todos, id) {
  const i = todos.findIndex((t) => t.id === id);
  return i === -1 ? null : todos.splice(i, 1)[0];
}

// Takes every done todo out of the list and returns how many were taken.
function clearDone(todos) {
  const before = todos.length;
  const kept = todos.filter((t) => !t.done);
  todos.splice(0, todos.length, ...kept);
  return before - kept.length;
}

function pending(todos) {
  return todos.filter((t) => !t.done);
}

module.exports = { add, complete, remove, clearDone, pending, nextId };
