#!/usr/bin/env node
'use strict';

const { loadTodos, saveTodos } = require('./storage');
const { add, complete, remove, pending } = require('./todos');
const { formatList } = require('./format');

function main(argv) {
  const [command, ...rest] = argv;
  const todos = loadTodos();
  switch (command) {
    case 'add': {
      const id = add(todos, rest.join(' '));
      saveTodos(todos);
      console.log(`added #${id}`);
      return 0;
    }
    case 'done':
    case 'rm': {
      const id = Number(rest[0]);
      const found = command === 'done' ? complete(todos, id) : remove(todos, id) !== null;
      if (!found) {
        console.error(`no todo #${rest[0]}`);
        return 1;
      }
      saveTodos(todos);
      return 0;
    }
    case 'list':
    case undefined:
      console.log(formatList(rest.includes('--all') ? todos : pending(todos)));
      return 0;
    default:
      console.error(`unknown command ${command}: try add, done, rm or list`);
      return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
