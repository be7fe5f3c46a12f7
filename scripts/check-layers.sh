#!/usr/bin/env bash
# The layering rule of docs/ARCHITECTURE.md, checked over the #include lines
# of src/: a file in src/<layer>/ may include project headers ("dir/x.h")
# only from its own layer and from the layers listed for it below. Run by
# `make test` (make check-layers); prints each offending line and exits 1.
set -euo pipefail
cd "$(dirname "$0")/../src"

# layer: the layers below it that it may use. trace sits beside the others:
# every layer may call its hooks, and it reads the scheduler's types to
# record them.
declare -A allowed=(
	[arch]=""
	[util]=""
	[context]="util"
	[stack]="context util"
	[sched]="stack context util trace"
	[trace]="sched stack context util"
	[sync]="sched stack context util trace"
	[io]="sync sched stack context util trace"
	[runtime]="io sync sched stack context util trace"
	[posix]="runtime io sync sched stack context util trace"
	[sim]=""
)

bad=0
for dir in */; do
	layer=${dir%/}
	if [[ ! -v allowed[$layer] ]]; then
		echo "check-layers: src/$layer/ is not in the layer table of scripts/check-layers.sh"
		bad=1
		continue
	fi
	while IFS= read -r hit; do
		file=${hit%%:*}
		rest=${hit#*:}
		line=${rest%%:*}
		inc=$(sed -E 's/.*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"${rest#*:}")
		[[ $inc == */* ]] || continue # a header beside the file
		target=${inc%%/*}
		[[ $target == "$layer" ]] && continue
		if [[ " ${allowed[$layer]} " != *" $target "* ]]; then
			echo "src/$file:$line: $layer may not include $inc (allowed: ${allowed[$layer]:-nothing from src/})"
			bad=1
		fi
	done < <(grep -Hn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$layer"/*.[chS] 2>/dev/null || true)
done
if [[ $bad == 0 ]]; then
	echo "check-layers: every #include in src/ points down the layers"
fi
exit $bad
