'use strict';

const fs = require('fs');
const path = require('path');

const DEFAULT_FILE = path.join(process.cwd(), 'todos.json');

// Reads the todos from `file`; a file that does not exist yet is an empty list.
function loadTodos(file = DEFAULT_FILE) {
  if (!fs.existsSync(file)) return [];
  return JSON.parse(fs.readFileSync(file, 'utf8')).todos;
}

function saveTodos(todos, file = DEFAULT_FILE) {
  fs.writeFileSync(file, JSON.stringify({ todos }, null, 2) + '\n');
}

module.exports = { loadTodos, saveTodos, DEFAULT_FILE };
