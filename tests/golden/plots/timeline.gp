# ratiolab plot timeline (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.svg'" THIS.gp to rename)
# Paper size: 7.0 in x 1.70 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "timeline.svg"
datafile = "timeline.dat"
set terminal svg size 504,122 font ',6' linewidth 1 background '#ffffff'
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
set xrange [0:69.69]
set xtics 20 format '%g'
unset grid
set grid xtics lc rgb '#e0e0e0' lw 0.6
unset key
set ytics scale 0
set lmargin at screen 0.1400
set rmargin at screen 0.9786
set tmargin at screen 0.8706
set bmargin at screen 0.5647
set title 'predicted: ' . "trace-predicted.json"
unset xlabel
set format x ''
set yrange [3.5:-0.5]
set ytics ("GPU 0 compute" 0, "GPU 0 D2H" 1, "GPU 0 H2D" 2, "rank 0 CPU Adam" 3)
unset label
set label 200 "forward" at 5.000000, 0 center front font ',4.67' boxed
set label 201 "backward" at 20.000000, 0 center front font ',4.67' boxed
set label 202 "gpu_adam" at 32.500000, 0 center front font ',4.67' boxed
set label 203 "cpu_adam" at 50.500000, 3 center front font ',4.67' boxed
set label 204 "grad_d2h" at 34.000000, 1 center front font ',4.67' boxed
set label 205 "param_h2d" at 66.000000, 2 center front font ',4.67' boxed
plot datafile index 1 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs solid 1.0, \
     datafile index 2 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs pattern 4 border lc rgb '#0072B2', \
     datafile index 3 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#009E73' fs solid 1.0, \
     datafile index 4 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#E69F00' fs solid 1.0, \
     datafile index 5 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#D55E00' fs solid 1.0, \
     datafile index 6 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#D55E00' fs pattern 5 border lc rgb '#D55E00'
set lmargin at screen 0.1400
set rmargin at screen 0.9786
set tmargin at screen 0.3647
set bmargin at screen 0.2118
set title 'measured: ' . "trace-measured.json"
set xlabel 'time (ms)' offset 0,0.9
set format x '%g'
set yrange [1.5:-0.5]
set ytics ("rank 0 compute" 0, "rank 0 CPU Adam" 1)
unset label
set label 200 "forward" at 5.500000, 0 center front font ',4.67' boxed
set label 201 "backward" at 21.750000, 0 center front font ',4.67' boxed
set label 203 "cpu_adam" at 39.000000, 1 center front font ',4.67' boxed
set label 206 "io" at 59.500000, 0 center front font ',4.67' boxed
plot datafile index 9 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs solid 1.0, \
     datafile index 10 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs pattern 4 border lc rgb '#0072B2', \
     datafile index 12 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#E69F00' fs solid 1.0, \
     datafile index 15 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#332288' fs solid 1.0
# the key: none, every category drawn is named on its spans
unset multiplot
