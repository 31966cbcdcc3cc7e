#!/bin/sh
# plots.sh — the gnuplot figures of a perf report (SVG and PNG), from perf_report's .dat files.
#   plots.sh PREFIX THRESHOLD     ratio per row with its interval, latency CDF A vs B, % roofline,
#                                 chat time to first token per turn (cache on and off, A and B)
#   plots.sh --history PREFIX     tok/s per rev
set -eu
command -v gnuplot >/dev/null || { echo "plots.sh: gnuplot not installed (make deps)" >&2; exit 1; }
term() { # the two terminals, one after the other, around the same plot commands
    printf 'set terminal svg size %s dynamic background "white" noenhanced\nset output "%s.svg"\n%s\n' "$1" "$2" "$3" | gnuplot
    printf 'set terminal pngcairo size %s noenhanced\nset output "%s.png"\n%s\n' "$1" "$2" "$3" | gnuplot 2>/dev/null ||
        printf 'set terminal png size %s noenhanced\nset output "%s.png"\n%s\n' "$1" "$2" "$3" | gnuplot
}
if [ "$1" = --history ]; then
    p=$2
    n=$(head -1 "$p.dat" | awk -F'"' '{ print (NF - 1) / 2 }')
    term 900,500 "$p" "set key outside right; set ylabel 'tok/s'; set logscale y; set grid ytics
set xtics rotate by -30; set title 'tok/s per rev (median over rounds)'
plot for [i=2:$((n + 1))] '$p.dat' using 0:i:xtic(1) with linespoints title columnhead(i)"
    if [ -s "$p-instr.dat" ]; then
        n=$(head -1 "$p-instr.dat" | awk -F'"' '{ print (NF - 1) / 2 }')
        term 900,500 "$p-instr" "set key outside right; set ylabel 'instructions per token'
set logscale y; set grid ytics; set xtics rotate by -30
set title 'instructions per token per rev (callgrind)'
plot for [i=2:$((n + 1))] '$p-instr.dat' using 0:i:xtic(1) with linespoints title columnhead(i)"
    fi
    exit 0
fi
p=$1 thr=$2
term 1000,550 "$p-ratio" "set title 'candidate / baseline per row: median and 95% bootstrap interval'
set ylabel 'A/B (tok/s: <1 slower; ms, MiB: >1 slower)'; set grid ytics; set key off
set xtics rotate by -40 font ',8'; set bmargin 12; set xrange [-0.5:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc 'black'
set arrow from graph 0, first 1-$thr to graph 1, first 1-$thr nohead dt 2 lc 'red'
set arrow from graph 0, first 1+$thr to graph 1, first 1+$thr nohead dt 2 lc 'red'
plot '$p-ratios.dat' using 1:3:4:5:xtic(2) with yerrorbars pt 7 lc 'blue'"
cdfs=""
for a in "$p"-cdf-*-A.dat; do
    [ -f "$a" ] || continue
    b=${a%-A.dat}-B.dat
    [ -f "$b" ] || continue
    m=$(head -1 "$a" | cut -c3-)
    cdfs="$cdfs '$a' using 1:2 with lines lw 2 title 'A $m', '$b' using 1:2 with lines lw 2 dt 2 title 'B $m',"
done
if [ -n "$cdfs" ]; then
    term 900,500 "$p-cdf" "set title 'decode latency per token, CDF over every pair'
set xlabel 'ms per token'; set ylabel 'fraction'; set logscale x; set grid; set key bottom right
plot ${cdfs%,}"
fi
if [ -s "$p-roofline.dat" ]; then
    term 900,500 "$p-roofline" "set title '% of the read roofline per tg row (median over pairs)'
set style data histograms; set style fill solid 0.7; set ylabel '% of roofline'; set grid ytics
set xtics rotate by -20; set yrange [0:*]
plot '$p-roofline.dat' using 2:xtic(1) title 'A', '' using 3 title 'B'"
fi
if [ -s "$p-chat.dat" ]; then
    m=$(head -1 "$p-chat.dat" | sed 's/^# //; s/:.*//')
    term 900,500 "$p-chat" "set title '$m: time to first token per turn (median over pairs)'
set xlabel 'turn'; set xtics 1; set ylabel 'ms'; set grid; set key top left; set yrange [0:*]
plot '$p-chat.dat' using 1:2 with linespoints lw 2 pt 7 lc 'blue' title 'A, prefix cache', \\
     '' using 1:3 with linespoints lw 2 pt 5 lc 'red' title 'A, no cache', \\
     '' using 1:4 with linespoints dt 2 pt 6 lc 'blue' title 'B, prefix cache', \\
     '' using 1:5 with linespoints dt 2 pt 4 lc 'red' title 'B, no cache'"
fi
