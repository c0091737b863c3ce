// The page's modules import each other one way: no circle among the files of `static/` (a view
// module that must make another redraw announces it through state.js's `changed`, and the entry
// module, app.js, wires who redraws what), and the modules without a DOM import only each other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const STATIC = new URL('../../static/', import.meta.url).pathname;

// The modules the node tests import: no DOM, and nothing that has one.
const DOM_FREE = ['protocol.js', 'library.js', 'exports.js', 'trace.js', 'hook-levels.js', 'server.js', 'compaction.js', 'errors.js', 'hook-replay.js'];

// `import … from './x.js'`, `import './x.js'`, `export … from './x.js'` and `import('./x.js')`,
// across lines; what they name, as file names of static/ (imports of other folders are kept as
// written, so they cannot hide a circle).
export function importsOf(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"\\])\/\/.*$/gm, '$1');
  const found = new Set();
  const patterns = [
    /\b(?:import|export)\s+(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) found.add(match[1].replace(/^\.\//, ''));
  }
  return [...found].sort();
}

// Every `static/*.js` file and the files it imports.
function importGraph() {
  const graph = new Map();
  for (const name of readdirSync(STATIC).filter((n) => n.endsWith('.js')).sort()) {
    graph.set(name, importsOf(readFileSync(join(STATIC, name), 'utf8')));
  }
  return graph;
}

// The groups of files that import each other in a circle (Tarjan's strongly connected
// components with more than one file, or one file that imports itself), each sorted.
export function circles(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (file) => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) || []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file), index.get(next)));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1 || (graph.get(file) || []).includes(file)) found.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

test('no circle among the files of static/', () => {
  const graph = importGraph();
  assert.ok(graph.size >= 20, 'read ' + graph.size + ' files of static/');
  assert.ok(graph.get('app.js').includes('chat.js'), 'the imports are read: ' + graph.get('app.js'));
  const found = circles(graph).map((group) => group.join(' ↔ '));
  assert.deepEqual(found, [], 'files that import each other in a circle:\n' + found.join('\n'));
});

test('the modules without a DOM import only each other', () => {
  const graph = importGraph();
  for (const file of DOM_FREE) {
    assert.ok(graph.has(file), file + ' is in static/');
    const outside = graph.get(file).filter((name) => !DOM_FREE.includes(name));
    assert.deepEqual(outside, [], file + ' imports modules with a DOM');
  }
});

test('the circle finder sees a circle, a file that imports itself, and nothing else', () => {
  const graph = new Map([
    ['a.js', ['b.js']],
    ['b.js', ['c.js', 'd.js']],
    ['c.js', ['a.js']],
    ['d.js', ['vendor/x.js']],
    ['e.js', ['e.js']],
  ]);
  assert.deepEqual(circles(graph), [['a.js', 'b.js', 'c.js'], ['e.js']]);
  graph.set('c.js', []);
  graph.set('e.js', ['d.js']);
  assert.deepEqual(circles(graph), []);
});

test('the import reader sees every form and skips comments', () => {
  const source = [
    "import { a,",
    "  b } from './one.js';",
    "import './two.js'; // the side effects",
    "export { c } from \"./three.js\";",
    "import * as four from './four.js';",
    "const five = await import('./five.js');",
    "// import { x } from './commented.js';",
    "/* import './also-commented.js'; */",
    "const url = 'http://example.com/x.js';",
  ].join('\n');
  assert.deepEqual(importsOf(source), ['five.js', 'four.js', 'one.js', 'three.js', 'two.js']);
});
