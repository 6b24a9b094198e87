# ratiolab plot timeline (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.pdf'" THIS.gp to rename)
# Paper size: 3.5 in x 0.57 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "timeline-pids.pdf"
datafile = "timeline-pids.dat"
set terminal pdfcairo size 3.50in,0.57in font ',9' linewidth 1
set output outfile
set termoption noenhanced
set datafile separator '\t'
set datafile missing '?'
set border 3 lw 0.8
set tics nomirror out scale 0.6
set grid ytics lc rgb '#e0e0e0' lw 0.6 dt 1
set grid back
set key noautotitle samplen 2.5 spacing 1.0
set xtics offset 0,0.4
# palette: Okabe-Ito, with distinct dash and point types for grey print
set linetype 1 lc rgb '#0072B2' lw 1.4 dt 1 pt 7 ps 0.4
set linetype 2 lc rgb '#D55E00' lw 1.4 dt 2 pt 5 ps 0.4
set linetype 3 lc rgb '#009E73' lw 1.4 dt 4 pt 9 ps 0.4
set linetype 4 lc rgb '#CC79A7' lw 1.4 dt 5 pt 11 ps 0.4
set linetype 5 lc rgb '#E69F00' lw 1.4 dt 3 pt 13 ps 0.4
set linetype 6 lc rgb '#56B4E9' lw 1.4 dt 6 pt 4 ps 0.4
set linetype 7 lc rgb '#000000' lw 1.4 dt 1 pt 6 ps 0.4
set linetype cycle 7
set multiplot
# direct labels: a category's name on its widest span of a panel where it fits
set style textbox opaque fc rgb '#ffffff' noborder margins 0.5, 0.2
set style fill solid 1.0 noborder
set xrange [0:25.25]
set xtics 5 format '%g'
unset grid
set grid xtics lc rgb '#e0e0e0' lw 0.6
unset key
set ytics scale 0
set lmargin at screen 0.2800
set rmargin at screen 0.9571
set tmargin at screen 0.8596
set bmargin at screen 0.6316
set xlabel 'time (ms)' offset 0,0.9
set format x '%g'
set yrange [0.5:-0.5]
set ytics ("rank 0 CPU Adam" 0)
unset label
set label 200 "cpu_adam" at 12.500000, 0 center front font ',7' boxed
plot datafile index 1 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#E69F00' fs solid 1.0
# the key: none, every category drawn is named on its spans
unset multiplot
