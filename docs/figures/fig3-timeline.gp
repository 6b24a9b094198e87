# ratiolab plot timeline (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 7.0 in x 1.74 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "fig3-timeline.png"
datafile = "fig3-timeline.dat"
set terminal pngcairo size 1400,348 font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 background '#ffffff'
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
set xrange [0:527.202]
set xtics 100 format '%g'
unset grid
set grid xtics lc rgb '#e0e0e0' lw 0.6
unset key
set ytics scale 0
set lmargin at screen 0.2143
set rmargin at screen 0.9786
set tmargin at screen 0.9540
set bmargin at screen 0.2069
set xlabel 'time (ms)' offset 0,0.9
set format x '%g'
set yrange [9.5:-0.5]
set ytics ("rank 0: GPU 0 compute" 0, "rank 0: GPU 0 D2H" 1, "rank 0: GPU 0 H2D" 2, "rank 0: GPU 0 host thread" 3, "rank 1: GPU 1 compute" 4, "rank 1: GPU 1 D2H" 5, "rank 1: GPU 1 H2D" 6, "rank 1: GPU 1 host thread" 7, "rank 0 CPU Adam" 8, "rank 1 CPU Adam" 9)
unset label
set label 200 "forward" at 50.231018, 0 center front font ',7' boxed
set label 201 "backward" at 191.187874, 0 center front font ',7' boxed
set label 202 "gpu_adam" at 315.466759, 0 left offset 0.5,0 front font ',7'
set label 203 "cpu_adam" at 415.751787, 8 center front font ',7' boxed
set label 205 "grad_d2h" at 307.547806, 1 right offset -0.5,0 front font ',7'
set label 207 "overflow_check" at 307.537806, 3 left offset 0.5,0 front font ',7'
plot datafile index 1 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs solid 1.0, \
     datafile index 2 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#0072B2' fs pattern 4 border lc rgb '#0072B2', \
     datafile index 3 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#009E73' fs solid 1.0, \
     datafile index 4 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#E69F00' fs solid 1.0, \
     datafile index 5 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#CC79A7' fs pattern 5 border lc rgb '#CC79A7', \
     datafile index 6 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#D55E00' fs solid 1.0, \
     datafile index 7 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#D55E00' fs pattern 5 border lc rgb '#D55E00', \
     datafile index 8 using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '#56B4E9' fs pattern 2 border lc rgb '#56B4E9'
# the key, inside the plot area where no data lie; box (screen) 0.2200 0.2299 0.3366 0.4023
set lmargin at screen 0.01
set rmargin at screen 0.99
set tmargin at screen 0.99
set bmargin at screen 0.01
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset label
unset arrow
unset object
unset logscale
unset y2tics
unset y2label
set xrange [0:1]
set yrange [0:1]
set key at screen 0.2200, screen 0.4023 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#CC79A7' fs pattern 5 border lc rgb '#CC79A7' title "tp_allreduce"
set key at screen 0.2200, screen 0.3218 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#D55E00' fs pattern 5 border lc rgb '#D55E00' title "param_h2d"
unset multiplot
