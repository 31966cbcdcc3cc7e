#!/bin/sh
# check_base_types.sh — plumb.h (installed alone, so it includes nothing of the tree) and
# kernels/pl_base.h (what the kernels share with it) hold the same guarded block, from
# "#ifndef PL_BASE_TYPES_DEFINED" to "#endif /* PL_BASE_TYPES_DEFINED */": fails, with the
# diff, unless the two are byte for byte equal. Not a parser: a textual comparison.
#
# usage: check_base_types.sh ROOT      exit status: 0 equal, 1 different or missing, 2 usage
set -u
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: $0 ROOT" >&2; exit 2; }
pub=$1/engine/include/plumb.h base=$1/kernels/pl_base.h
tmp=$(mktemp -d "${TMPDIR:-/tmp}/plumb-base.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
block() { # block FILE: the guarded block, guard lines included
    sed -n '/^#ifndef PL_BASE_TYPES_DEFINED$/,/^#endif \/\* PL_BASE_TYPES_DEFINED \*\/$/p' "$1"
}
block "$pub" >"$tmp/pub" && block "$base" >"$tmp/base" || exit 1
for f in pub base; do
    if ! grep -q '^#endif /\* PL_BASE_TYPES_DEFINED \*/$' "$tmp/$f"; then
        echo "check_base_types: no closed PL_BASE_TYPES_DEFINED block in $( [ $f = pub ] && echo "$pub" || echo "$base")" >&2
        exit 1
    fi
done
if ! diff -u "$tmp/pub" "$tmp/base" >"$tmp/diff"; then
    echo "check_base_types: the shared block of $pub and $base differ:" >&2
    cat "$tmp/diff" >&2
    exit 1
fi
echo "check_base_types: $(wc -l <"$tmp/pub") lines shared, identical"
