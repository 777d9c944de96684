'use strict';

// How todos look in the terminal.

const MAX_TITLE_LENGTH = 40; // longer titles are cut, ending with an ellipsis

function truncate(text, max = MAX_TITLE_LENGTH) {
  return text.length <= max ? text : text.slice(0, max - 1) + '…';
}

function formatTodo(todo) {
  const box = todo.done ? '[x]' : '[ ]';
  return `${String(todo.id).padStart(3)} ${box} ${truncate(todo.title)}`;
}

function formatList(todos) {
  if (todos.length === 0) return 'nothing to do';
  return todos.map(formatTodo).join('\n');
}

module.exports = { formatTodo, formatList, truncate, MAX_TITLE_LENGTH };
