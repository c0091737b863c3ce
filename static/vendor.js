// The vendored libraries (static/vendor/, versions in VERSIONS) as the modules use them.
// markdown-it has no self-contained ES module build and highlight.js's browser build defines a
// global only, so index.html loads all three as classic scripts, before the modules run; each
// defines one global, handed out here. Under node (tests/js/), the tests load the same files
// first.

function loaded(name) {
  const lib = globalThis[name];
  if (!lib) throw new Error(name + ' is not loaded: index.html loads static/vendor/ before the modules');
  return lib;
}

/** markdown-it's factory. */
export const markdownIt = () => loaded('markdownit');
/** DOMPurify (needs a window). */
export const purifier = () => loaded('DOMPurify');
/** highlight.js, or null: code is then shown escaped, without colours. */
export const highlighter = () => globalThis.hljs || null;
