#!/bin/sh
# capture.sh GC PID: copy a running JVM's hsperfdata beside jstat -gc and
# jstat -class taken right after, trimmed to the bytes the JVM has used (the
# rest of the 32 KiB file is zeros). Regenerates the fixtures the tests use:
#   java -XX:+UseG1GC -Xmx64m Alloc.java & sleep 8; ./capture.sh g1 $!
#   java -XX:+UseG1GC -Xms5g -Xmx6g Alloc.java & sleep 8; ./capture.sh g1-large $!
set -eu
gc=$1 pid=$2
src=/tmp/hsperfdata_$(id -un)/$pid
cp "$src" "$gc.hsperf.tmp"
jstat -gc "$pid" > "$gc.jstat"
jstat -class "$pid" >> "$gc.jstat"
# prologue bytes 8..11: used, little-endian on x86-64
used=$(od -An -tu4 -j8 -N4 "$gc.hsperf.tmp" | tr -d ' ')
head -c "$used" "$gc.hsperf.tmp" > "$gc.hsperf"
rm "$gc.hsperf.tmp"
