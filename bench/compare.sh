#!/usr/bin/env bash
# bench/compare.sh: times tunetimeout against what people run instead on the
# same nginx access log (see bench/README.md):
#
#   tunetimeout analyze --by route            (one worker per core)
#   awk '{print $(NF-1)}' | datamash perc:... (Debian's datamash)
#   goaccess with the matching --log-format   (Debian's goaccess 1.7)
#   DuckDB: the same percentiles per route    (npm's @duckdb/node-api, under node)
#   wc -l                                     (the floor: reading the bytes)
#
# and the same on the log gzipped; then tunetimeout summarize (the log to an
# HdrHistogram interval log) and analyze of that summary; then tunetimeout,
# DuckDB and wc -l on a CSV and on JSON lines of 1.5 times as many rows.
# DuckDB is installed into $OUT/duckdb with npm when it is not there; when
# that fails (no node, no registry), its rows are left out. It generates the log with the project's
# own generator (2,000,000 lines of combined + $request_time
# $upstream_response_time, about 300 MB, seeded) into bench/out/ (ignored by
# git), runs the commands interleaved for several rounds on a warm page
# cache, and prints for each the median wall time, MB/s, peak RSS and the
# ratio to tunetimeout, then the issue's targets. It exits 0 whether or not
# the targets are met: it measures, it does not judge.
#
# Environment: LINES (2000000), ROUNDS (3), SEED (1), OUT (bench/out);
# ROWS (LINES * 3 / 2) rows of CSV and JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."

LINES=${LINES:-2000000}
ROWS=${ROWS:-$((LINES * 3 / 2))}
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

# The CSV and the JSON lines: the generator's rows (timestamp, route,
# status, latency_ms), and the same rows as JSON objects whose path holds a
# numeric id.
CSV="$OUT/rows.csv"
JSONL="$OUT/rows.jsonl"
RSTAMP="$OUT/rows.stamp"
rwant="rows=$ROWS seed=$SEED generator=$(git hash-object internal/mixture/mixture.go testdata/gen/main.go 2>/dev/null | tr '\n' ' ')"
if [ ! -s "$CSV" ] || [ ! -s "$JSONL" ] || [ "$(cat "$RSTAMP" 2>/dev/null)" != "$rwant" ]; then
  echo "generating $ROWS rows of CSV and of JSON lines (seed $SEED) into $OUT" >&2
  go run ./testdata/gen -format csv -n "$ROWS" -seed "$SEED" > "$CSV"
  go run ./testdata/gen -format json -n "$ROWS" -seed "$SEED" > "$JSONL"
  echo "$rwant" > "$RSTAMP"
fi
csvsize=$(stat -c %s "$CSV")
jsonlsize=$(stat -c %s "$JSONL")
JSONL_FLAGS="--input jsonl --field latency_ms --unit ms --time-field time --status-field status --path-field path --method-field method"

# DuckDB, from npm (it has no Debian package), run by a node script: each
# query reads the file itself, as tunetimeout does. Installed once.
DUCKDB_VERSION=1.5.6-r.1
DD="$OUT/duckdb"
duckdb=no
if command -v node >/dev/null && command -v npm >/dev/null; then
  if [ ! -d "$DD/node_modules/@duckdb/node-api" ]; then
    echo "installing @duckdb/node-api@$DUCKDB_VERSION into $DD" >&2
    mkdir -p "$DD"
    (cd "$DD" && npm install --silent --no-audit --no-fund "@duckdb/node-api@$DUCKDB_VERSION" > npm.log 2>&1) || true
  fi
  if [ -d "$DD/node_modules/@duckdb/node-api" ]; then
    duckdb=yes
  else
    duckdb="no: npm install @duckdb/node-api@$DUCKDB_VERSION failed (see $DD/npm.log)"
  fi
else
  duckdb="no: node and npm are needed"
fi
[ "$duckdb" = yes ] || echo "note: DuckDB left out ($duckdb)" >&2
if [ "$duckdb" = yes ]; then
  cat > "$DD/duckdb.mjs" <<'JS'
// node duckdb.mjs QUERY.sql: runs the query in an in-memory DuckDB and
// prints its rows, tab-separated.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'fs';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const r = await c.runAndReadAll(readFileSync(process.argv[2], 'utf8'));
for (const row of r.getRowsJS()) console.log(row.map(String).join('\t'));
JS
  # What tunetimeout works out of the samples, per route: the calls (4xx
  # and 5xx left out, as tunetimeout leaves them out by default), p50, p99,
  # p99.9 (exact, interpolated), the first and last second and the busiest
  # second (its rates). The route is the path without its query, numeric
  # segments as {id}: all the ids these inputs hold.
  per_route() { # $1: the rows (route, ts, latency, status) as a SELECT
    cat <<SQL
WITH t AS (SELECT route, ts, latency FROM ($1) WHERE status < 400),
g AS (SELECT route, count(*) AS calls, quantile_cont(latency, [0.5, 0.99, 0.999]) AS q,
  min(ts) AS first, max(ts) AS last FROM t GROUP BY route),
s AS (SELECT route, max(n) AS busiest FROM
  (SELECT route, date_trunc('second', ts) AS sec, count(*) AS n FROM t GROUP BY route, sec) GROUP BY route)
SELECT route, calls, q, first, last, busiest FROM g JOIN s USING (route) ORDER BY route;
SQL
  }
  route_of() { echo "regexp_replace(split_part($1, '?', 1), '/[0-9]+(/|\$)', '/{id}\\1', 'g')"; }
  per_route "SELECT $(route_of "split_part(request, ' ', 2)") AS route, strptime(ts, '[%d/%b/%Y:%H:%M:%S') AS ts,
  request_time AS latency, status
  FROM read_csv('$LOG', delim=' ', quote='\"', escape='\"', header=false, columns={'addr':'VARCHAR', 'ident':'VARCHAR',
    'user':'VARCHAR', 'ts':'VARCHAR', 'zone':'VARCHAR', 'request':'VARCHAR', 'status':'INTEGER', 'bytes':'VARCHAR',
    'referer':'VARCHAR', 'agent':'VARCHAR', 'request_time':'DOUBLE', 'upstream_time':'VARCHAR'})" > "$DD/nginx.sql"
  per_route "SELECT route, timestamp AS ts, latency_ms AS latency, status
  FROM read_csv('$CSV', header=true, columns={'timestamp':'TIMESTAMP', 'route':'VARCHAR', 'status':'INTEGER', 'latency_ms':'DOUBLE'})" > "$DD/csv.sql"
  per_route "SELECT $(route_of path) AS route, time AS ts, latency_ms AS latency, status
  FROM read_ndjson('$JSONL', columns={'time':'TIMESTAMP', 'level':'VARCHAR', 'method':'VARCHAR', 'path':'VARCHAR',
    'status':'INTEGER', 'latency_ms':'DOUBLE'})" > "$DD/jsonl.sql"
  echo "SELECT 42;" > "$DD/startup.sql"
fi

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
# at --window 1m, the summaries' interval and so their windows (but for its
# first line, which names the inputs, and the notes on the windows).
for h in 0 1 2; do
  awk -v h="$h" 'NR % 3 == h' "$LOG" > "$OUT/host$h.log"
  "$OUT/tunetimeout" summarize --by route -q --output "$OUT/host$h.hlog" "$OUT/host$h.log" 2> /dev/null
  rm "$OUT/host$h.log"
done
"$OUT/tunetimeout" analyze --by route --window 1m "$LOG" | tail -n +2 | grep -v '^- The calls fall in a single window of ' > "$OUT/whole.txt"
"$OUT/tunetimeout" analyze "$OUT"/host?.hlog | tail -n +2 | grep -v '^- Every input is an interval log: ' > "$OUT/hosts.txt"
if cmp -s "$OUT/whole.txt" "$OUT/hosts.txt"; then
  merged=yes
else
  merged="NO: see $OUT/whole.txt and $OUT/hosts.txt"
fi
"$OUT/tunetimeout" summarize --by route -q --output "$OUT/summary.hlog" "$LOG"
hlogsize=$(stat -c %s "$OUT/summary.hlog")

# One core and all cores give the same report from the CSV and the JSON
# lines too.
rows_identical=yes
for f in csv jsonl; do
  file=$CSV flags=""
  [ $f = jsonl ] && file=$JSONL flags=$JSONL_FLAGS
  GOMAXPROCS=1 "$OUT/tunetimeout" analyze --by route $flags -o json "$file" > "$OUT/$f-one-core.json"
  "$OUT/tunetimeout" analyze --by route $flags -o json "$file" > "$OUT/$f-all-cores.json"
  cmp -s "$OUT/$f-one-core.json" "$OUT/$f-all-cores.json" || rows_identical="NO: see $OUT/*-cores.json"
done

GOACCESS_FORMAT='%h %^[%d:%t %^] "%r" %s %b "%R" "%u" %T %^'
# Each command: its name, the command, the bytes it reads (for MB/s) and the
# command its time is compared with (x tunetimeout): the index of the
# tunetimeout row of the same input.
names=(tunetimeout "tunetimeout, 1 core" "awk | datamash" goaccess "wc -l"
  "tunetimeout .gz" "gzip -dc | awk | datamash" "gzip -dc | wc -l"
  "tunetimeout summarize" "tunetimeout analyze .hlog"
  "tunetimeout csv" "tunetimeout csv, 1 core" "wc -l csv"
  "tunetimeout jsonl" "tunetimeout jsonl, 1 core" "wc -l jsonl")
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
  "$OUT/tunetimeout analyze --by route $CSV"
  "GOMAXPROCS=1 $OUT/tunetimeout analyze --by route $CSV"
  "wc -l $CSV"
  "$OUT/tunetimeout analyze --by route $JSONL_FLAGS $JSONL"
  "GOMAXPROCS=1 $OUT/tunetimeout analyze --by route $JSONL_FLAGS $JSONL"
  "wc -l $JSONL"
)
bytes=("$size" "$size" "$size" "$size" "$size" "$size" "$size" "$size" "$size" "$size"
  "$csvsize" "$csvsize" "$csvsize" "$jsonlsize" "$jsonlsize" "$jsonlsize")
bases=(0 0 0 0 0 5 5 5 0 0 10 10 10 13 13 13)
if [ "$duckdb" = yes ]; then
  names+=("duckdb" "duckdb csv" "duckdb jsonl" "duckdb startup (SELECT 42)")
  cmds+=("node $DD/duckdb.mjs $DD/nginx.sql" "node $DD/duckdb.mjs $DD/csv.sql" "node $DD/duckdb.mjs $DD/jsonl.sql"
    "node $DD/duckdb.mjs $DD/startup.sql")
  bytes+=("$size" "$csvsize" "$jsonlsize" 0)
  bases+=(0 10 13 0)
  # DuckDB counts the calls of each route as tunetimeout does: the same
  # computation, not a near one.
  duckdb_same=yes
  for f in nginx csv jsonl; do
    case $f in
      nginx) json=$OUT/all-cores.json ;;
      *) json=$OUT/$f-all-cores.json ;;
    esac
    node "$DD/duckdb.mjs" "$DD/$f.sql" > "$DD/$f.out"
    cut -f1,2 "$DD/$f.out" | sort > "$DD/$f.calls"
    node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      for (const g of r.groups) console.log(g.name + "\t" + g.samples);' "$json" | sort > "$OUT/$f.calls" 2> /dev/null || true
    cmp -s "$DD/$f.calls" "$OUT/$f.calls" || duckdb_same="NO: see $DD/*.calls and $OUT/*.calls"
  done
fi

cat "$LOG" "$GZ" "$CSV" "$JSONL" > /dev/null # a warm page cache for every command
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
mb() { awk -v s="$1" 'BEGIN {printf "%.0f", s/1e6}'; }
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo
echo "$LINES lines, $(mb "$size") MB ($LOG; $(mb "$gzsize") MB gzipped)"
echo "$ROWS rows: $(mb "$csvsize") MB of CSV ($CSV), $(mb "$jsonlsize") MB of JSON lines ($JSONL)"
versions="$(nproc) cores ($cpu), $(go version | cut -d' ' -f3), GoAccess $goaccess_version, datamash $(datamash --version | head -1 | awk '{print $NF}')"
[ "$duckdb" = yes ] && versions="$versions, DuckDB $DUCKDB_VERSION (node $(node --version))"
echo "$versions"
echo "median of $ROUNDS interleaved rounds; MB/s of the uncompressed input; peak RSS of the largest process"
echo
printf '%-28s %9s %8s %14s %14s   %s\n' command "wall (s)" "MB/s" "peak RSS (MB)" "x tunetimeout" "rounds (s)"
declare -A med
for i in "${!cmds[@]}"; do
  med[$i]=$(echo "${walls[$i]}" | median)
done
for i in "${!cmds[@]}"; do
  base=${med[${bases[$i]}]}
  awk -v n="${names[$i]}" -v w="${med[$i]}" -v s="${bytes[$i]}" -v k="${rss[$i]}" -v b="$base" -v r="${walls[$i]}" 'BEGIN {
    printf "%-28s %9.2f %8s %14.1f %14.1f  %s\n", n, w, (s > 0 && w > 0 ? sprintf("%.0f", s/1e6/w) : "-"), k/1024, (b > 0 ? w/b : 0), r }'
done
echo
echo "same report with 1 core, all cores and the .gz: $identical"
echo "same report from the summaries of 3 hosts as from the whole log: $merged"
echo "same report with 1 core and all cores from the CSV and the JSON lines: $rows_identical"
if [ "$duckdb" = yes ]; then
  echo "DuckDB counts the calls of each route as tunetimeout does: $duckdb_same"
else
  echo "DuckDB: $duckdb"
fi
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
awk -v t="${med[0]}" -v w="${med[4]}" 'BEGIN {
  verdict = "met"; if (t > 8 * w) verdict = sprintf("NOT met: needs %.2fs", 8 * w)
  printf "target: at most 8x the time of wc -l on the nginx log: %.1fx, %s\n", (w > 0 ? t / w : 0), verdict
}'
if [ "$duckdb" = yes ]; then
  for k in "nginx 0 16" "CSV 10 17" "JSON_lines 13 18"; do
    read -r what t d <<< "$k"
    what=${what/_/ }
    awk -v n="$what" -v t="${med[$t]}" -v d="${med[$d]}" -v s="${med[19]}" 'BEGIN {
      r = (d > 0 ? t / d : 0)
      verdict = "met"; if (r > 0.5) verdict = sprintf("NOT met: needs %.2fs", d / 2)
      aim = (r <= 0.25 ? "the aim of 0.25x too" : sprintf("the aim of 0.25x not (%.2fs)", d / 4))
      printf "target: at most 0.5x the time of DuckDB on %s: %.2fx, %s; %s (DuckDB less its startup: %.2fx)\n", n, r, verdict, aim, (d > s ? t / (d - s) : 0)
    }'
  done
fi
