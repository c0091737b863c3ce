#!/bin/sh
# Refreshes the page's vendored libraries from the npm registry (no CDN at run time: the server
# serves these files itself). Run from anywhere: `sh static/vendor/refresh.sh`; edit the versions
# below to move to another release, then run the browser tests. Needs npm and tar.
#
#   markdown-it             Markdown → HTML (raw HTML off)           static/vendor/
#   dompurify               sanitises that HTML before it is shown   static/vendor/
#   @highlightjs/cdn-assets highlight.js, its browser build          static/vendor/
#   axe-core                accessibility checks, for the tests only tests/vendor/
set -eu

MARKDOWN_IT=15.0.3
DOMPURIFY=3.4.18
HIGHLIGHT=11.11.1
AXE=4.14.1

here=$(cd "$(dirname "$0")" && pwd)
tests=$(cd "$here/../../tests" && pwd)/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tests"

# Unpacks package $1 at version $2 into $tmp/<name>/package.
fetch() {
  dir="$tmp/$(echo "$1" | tr '/@' '__')"
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$1@$2" >/dev/null && tar xzf ./*.tgz)
  echo "$dir/package"
}

md=$(fetch markdown-it "$MARKDOWN_IT")
cp "$md/dist/browser/markdown-it.umd.min.js" "$here/markdown-it.min.js"
cp "$md/LICENSE" "$here/LICENSE.markdown-it"

purify=$(fetch dompurify "$DOMPURIFY")
cp "$purify/dist/purify.min.js" "$here/purify.min.js"
cp "$purify/LICENSE" "$here/LICENSE.dompurify"

hl=$(fetch @highlightjs/cdn-assets "$HIGHLIGHT")
cp "$hl/highlight.min.js" "$here/highlight.min.js"
cp "$hl/styles/github-dark.min.css" "$here/highlight-github-dark.min.css"
cp "$hl/LICENSE" "$here/LICENSE.highlight.js"

axe=$(fetch axe-core "$AXE")
cp "$axe/axe.min.js" "$tests/axe.min.js"
cp "$axe/LICENSE" "$tests/LICENSE.axe-core"

cat > "$here/VERSIONS" <<LIST
# Vendored from the npm registry by refresh.sh; licenses in LICENSE.<name>.
markdown-it $MARKDOWN_IT MIT dist/browser/markdown-it.umd.min.js
dompurify $DOMPURIFY MPL-2.0-or-Apache-2.0 dist/purify.min.js
@highlightjs/cdn-assets $HIGHLIGHT BSD-3-Clause highlight.min.js styles/github-dark.min.css
LIST
cat > "$tests/VERSIONS" <<LIST
# Vendored from the npm registry by static/vendor/refresh.sh; license in LICENSE.axe-core.
axe-core $AXE MPL-2.0 axe.min.js
LIST
echo "vendored: markdown-it $MARKDOWN_IT, dompurify $DOMPURIFY, highlight.js $HIGHLIGHT, axe-core $AXE"
