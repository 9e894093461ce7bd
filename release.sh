#!/usr/bin/env bash
# release.sh VERSION: releases every module of modules.txt at VERSION.
# It sets each module's requirements on the others (and go.work's
# mapping) to VERSION, commits that, and tags the modules in dependency
# order: the root module as VERSION, the others as DIR/VERSION, as Go
# expects of a module in a subdirectory. It pushes nothing: push the
# commit and the tags yourself (git push --follow-tags, or git push origin
# TAG for each printed tag), in the printed order.
set -euo pipefail
cd "$(dirname "$0")"
version="${1:-}"
if ! [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: ./release.sh vMAJOR.MINOR.PATCH" >&2; exit 2
fi
if ! [[ "$version" =~ ^v[01]\. ]]; then
  echo "release.sh: $version: a major version of 2 or more needs /vN module paths, which this script does not change" >&2; exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
  echo "release.sh: the work tree has uncommitted changes; commit or stash them first" >&2; exit 1
fi
base=github.com/agentmem-sdk/agentmem
old=$(sed -n 's/^version //p' modules.txt)
mapfile -t dirs < <(grep -v '^#' modules.txt | grep -v '^version ' | sed '/^$/d')
path_of() { if [ "$1" = . ]; then echo "$base"; else echo "$base/$1"; fi; }

for dir in "${dirs[@]}"; do
  for dep in "${dirs[@]}"; do
    p=$(path_of "$dep")
    if grep -q "^[[:space:]]*$p v" "$dir/go.mod" 2>/dev/null || grep -q "^require $p v" "$dir/go.mod"; then
      (cd "$dir" && GOWORK=off go mod edit -require="$p@$version")
    fi
  done
done
for dep in "${dirs[@]}"; do
  p=$(path_of "$dep")
  go work edit -dropreplace="$p@$old" -replace="$p@$version=./${dep#.}"
done
sed -i "s/^version .*/version $version/" modules.txt
git commit -q -am "release $version" || true

for dir in "${dirs[@]}"; do
  if [ "$dir" = . ]; then tag="$version"; else tag="$dir/$version"; fi
  git tag "$tag"
  echo "$tag"
done
