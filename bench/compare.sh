#!/usr/bin/env bash
# bench/compare.sh: times tunetimeout against what people run instead on the
# same nginx access log (see bench/README.md):
#
#   tunetimeout analyze --by route            (one worker per core)
#   awk '{print $(NF-1)}' | datamash perc:... (Debian's datamash)
#   goaccess with the matching --log-format   (Debian's goaccess 1.7)
#   wc -l                                     (the floor: reading the bytes)
#
# and the same on the log gzipped; then tunetimeout summarize (the log to an
# HdrHistogram interval log) and analyze of that summary. It generates the log with the project's
# own generator (2,000,000 lines of combined + $request_time
# $upstream_response_time, about 300 MB, seeded) into bench/out/ (ignored by
# git), runs the commands interleaved for several rounds on a warm page
# cache, and prints for each the median wall time, MB/s, peak RSS and the
# ratio to tunetimeout, then the issue's targets. It exits 0 whether or not
# the targets are met: it measures, it does not judge.
#
# Environment: LINES (2000000), ROUNDS (3), SEED (1), OUT (bench/out).
set -euo pipefail
cd "$(dirname "$0")/.."

LINES=${LINES:-2000000}
ROUNDS=${ROUNDS:-3}
SEED=${SEED:-1}
OUT=${OUT:-bench/out}
export PATH="/usr/local/go/bin:$PATH"

# The tools, and the Debian packages that hold them.
missing=()
command -v go >/dev/null || missing+=("go (https://go.dev/dl/, 1.26 or later)")
command -v datamash >/dev/null || missing+=(datamash)
command -v goaccess >/dev/null || missing+=(goaccess)
command -v gzip >/dev/null || missing+=(gzip)
if ! /usr/bin/time -f %M true >/dev/null 2>&1; then missing+=("time (GNU time as /usr/bin/time)"); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare.sh needs: ${missing[*]}" >&2
  echo "on Debian or Ubuntu: sudo apt-get install -y datamash goaccess time" >&2
  exit 1
fi
goaccess_version=$(goaccess --version 2>/dev/null | head -1 | grep -o '[0-9][0-9.]*[0-9]' | head -1 || true)
case "$goaccess_version" in
  1.7*) ;;
  *) echo "note: GoAccess $goaccess_version, not the 1.7 of the README's figures" >&2 ;;
esac

mkdir -p "$OUT"
LOG="$OUT/access.log"
GZ="$OUT/access.log.gz"
STAMP="$OUT/access.log.stamp"
go build -o "$OUT/tunetimeout" ./cmd/tunetimeout
want="lines=$LINES seed=$SEED generator=$(git hash-object internal/mixture/nginx.go internal/mixture/mixture.go testdata/gen/main.go 2>/dev/null | tr '\n' ' ')"
if [ ! -s "$LOG" ] || [ ! -s "$GZ" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "generating $LINES lines (seed $SEED) into $LOG" >&2
  go run ./testdata/gen -format nginx -n "$LINES" -seed "$SEED" > "$LOG"
  gzip -c "$LOG" > "$GZ"
  echo "$want" > "$STAMP"
fi
size=$(stat -c %s "$LOG")
gzsize=$(stat -c %s "$GZ")

# The single-threaded and the parallel reading give the same report.
GOMAXPROCS=1 "$OUT/tunetimeout" analyze --by route -o json "$LOG" > "$OUT/one-core.json"
"$OUT/tunetimeout" analyze --by route -o json "$LOG" > "$OUT/all-cores.json"
"$OUT/tunetimeout" analyze --by route -o json "$GZ" | sed "s|$GZ|$LOG|" > "$OUT/gz.json"
if cmp -s "$OUT/one-core.json" "$OUT/all-cores.json" && cmp -s "$OUT/all-cores.json" "$OUT/gz.json"; then
  identical=yes
else
  identical="NO: see $OUT/*.json"
fi

# The log spread over three hosts (line i on host i mod 3), each summarised
# apart: the summaries analysed together give the report of the whole log
# (but for its first line, which names the inputs).
for h in 0 1 2; do
  awk -v h="$h" 'NR % 3 == h' "$LOG" > "$OUT/host$h.log"
  "$OUT/tunetimeout" summarize --by route -q --output "$OUT/host$h.hlog" "$OUT/host$h.log" 2> /dev/null
  rm "$OUT/host$h.log"
done
"$OUT/tunetimeout" analyze --by route "$LOG" | tail -n +2 > "$OUT/whole.txt"
"$OUT/tunetimeout" analyze "$OUT"/host?.hlog | tail -n +2 > "$OUT/hosts.txt"
if cmp -s "$OUT/whole.txt" "$OUT/hosts.txt"; then
  merged=yes
else
  merged="NO: see $OUT/whole.txt and $OUT/hosts.txt"
fi
"$OUT/tunetimeout" summarize --by route -q --output "$OUT/summary.hlog" "$LOG"
hlogsize=$(stat -c %s "$OUT/summary.hlog")

GOACCESS_FORMAT='%h %^[%d:%t %^] "%r" %s %b "%R" "%u" %T %^'
names=(tunetimeout "tunetimeout, 1 core" "awk | datamash" goaccess "wc -l"
  "tunetimeout .gz" "gzip -dc | awk | datamash" "gzip -dc | wc -l"
  "tunetimeout summarize" "tunetimeout analyze .hlog")
cmds=(
  "$OUT/tunetimeout analyze --by route $LOG"
  "GOMAXPROCS=1 $OUT/tunetimeout analyze --by route $LOG"
  "awk '{print \$(NF-1)}' $LOG | datamash perc:50 1 perc:99 1 perc:99.9 1"
  "goaccess $LOG --no-global-config --no-progress --log-format='$GOACCESS_FORMAT' --date-format=%d/%b/%Y --time-format=%T -o $OUT/goaccess.json"
  "wc -l $LOG"
  "$OUT/tunetimeout analyze --by route $GZ"
  "gzip -dc $GZ | awk '{print \$(NF-1)}' | datamash perc:50 1 perc:99 1 perc:99.9 1"
  "gzip -dc $GZ | wc -l"
  "$OUT/tunetimeout summarize --by route -q --output $OUT/summary.hlog $LOG"
  "$OUT/tunetimeout analyze $OUT/summary.hlog"
)

cat "$LOG" "$GZ" > /dev/null # a warm page cache for every command
declare -A walls rss
for round in $(seq "$ROUNDS"); do
  for i in "${!cmds[@]}"; do
    # GNU time: wall seconds and the peak RSS (KB) of the largest process.
    if ! /usr/bin/time -o "$OUT/time.txt" -f '%e %M' sh -c "${cmds[$i]}" > /dev/null 2> "$OUT/stderr.txt"; then
      echo "failed: ${cmds[$i]}" >&2
      cat "$OUT/stderr.txt" >&2
      exit 1
    fi
    read -r wall kb < <(tail -1 "$OUT/time.txt")
    walls[$i]="${walls[$i]:-} $wall"
    rss[$i]=$(( kb > ${rss[$i]:-0} ? kb : ${rss[$i]:-0} ))
  done
  echo "round $round of $ROUNDS done" >&2
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo
echo "$LINES lines, $(awk -v s="$size" 'BEGIN {printf "%.0f", s/1e6}') MB ($LOG; $(awk -v s="$gzsize" 'BEGIN {printf "%.0f", s/1e6}') MB gzipped)"
echo "$(nproc) cores ($cpu), $(go version | cut -d' ' -f3), GoAccess $goaccess_version, datamash $(datamash --version | head -1 | awk '{print $NF}')"
echo "median of $ROUNDS interleaved rounds; MB/s of the uncompressed log; peak RSS of the largest process"
echo
printf '%-28s %9s %8s %14s %14s   %s\n' command "wall (s)" "MB/s" "peak RSS (MB)" "x tunetimeout" "rounds (s)"
declare -A med
for i in "${!cmds[@]}"; do
  med[$i]=$(echo "${walls[$i]}" | median)
done
for i in "${!cmds[@]}"; do
  base=${med[0]}
  [ "$i" -ge 5 ] && [ "$i" -le 7 ] && base=${med[5]} # the .gz commands against tunetimeout .gz
  awk -v n="${names[$i]}" -v w="${med[$i]}" -v s="$size" -v k="${rss[$i]}" -v b="$base" -v r="${walls[$i]}" 'BEGIN {
    printf "%-28s %9.2f %8.0f %14.1f %14.1f  %s\n", n, w, (w > 0 ? s/1e6/w : 0), k/1024, (b > 0 ? w/b : 0), r }'
done
echo
echo "same report with 1 core, all cores and the .gz: $identical"
echo "same report from the summaries of 3 hosts as from the whole log: $merged"
awk -v s="$size" -v h="$hlogsize" 'BEGIN { printf "summary: %.0f KB, 1/%.0f of the log (one-minute intervals, four routes)\n", h/1e3, s/h }'
awk -v t="${med[0]}" -v a="${med[2]}" -v g="${med[3]}" -v k="${rss[0]}" -v kz="${rss[5]}" 'BEGIN {
  verdict = "met"; if (a / t < 2) verdict = sprintf("NOT met: needs %.2fs", a / 2)
  printf "target: at most half the time of awk | datamash: %.1fx faster, %s\n", a / t, verdict
  verdict = "met"; if (g / t < 50) verdict = sprintf("NOT met: short by %.0f %%", (1 - (g / t) / 50) * 100)
  printf "target: at least 50x faster than GoAccess: %.1fx, %s\n", g / t, verdict
  m = (k > kz ? k : kz) / 1024
  verdict = "met"; if (m >= 100) verdict = "NOT met"
  printf "target: peak RSS under 100 MB: %.1f MB, %s\n", m, verdict
}'
