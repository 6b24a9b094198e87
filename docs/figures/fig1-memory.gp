# ratiolab plot memory (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 7.0 in x 2.20 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "fig1-memory.png"
datafile = "fig1-memory.dat"
set terminal pngcairo size 1400,440 font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 background '#ffffff'
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
set xlabel 'requested ratio' offset 0,0.9
set xrange [0:1]
set xtics 0.2 format '%.1f'
unset key
set lmargin at screen 0.0714
set rmargin at screen 0.4786
set tmargin at screen 0.9636
set bmargin at screen 0.1636
unset ylabel
set label 90 "honored ratio" at screen 0.0114, screen 0.5636 center rotate by 90
set yrange [0:1.02]
set ytics 0, 0.2, 1 format '%.1f'
set label 1 '(a)' at graph 0.04, graph 0.92 left
plot x with lines lc rgb '#c8c8c8' dt 1 lw 5, \
     datafile index 0 using 1:2:($6-$1):(0) with vectors nohead lt 1 dt 1, \
     datafile index 0 using 1:2 with points lt 1, \
     datafile index 1 using 1:2 with lines lt 2 dt 1, \
     datafile index 1 using 1:2 with points lt 2
set lmargin at screen 0.5714
set rmargin at screen 0.9786
set tmargin at screen 0.9636
set bmargin at screen 0.1636
unset ylabel
set label 90 "memory per rank (GiB)" at screen 0.5114, screen 0.5636 center rotate by 90
set yrange [0:25]
set ytics 0, 5, 25 format '%g'
set label 1 '(b) solid: GPU, dashed: host' at graph 0.04, graph 0.92 left
set label 2 at graph 0.98, first 16.0000 right offset 0,0.5 font ',8' "GPU capacity 16 GiB"
plot NaN notitle, \
     datafile index 0 using 1:3:($6-$1):(0) with vectors nohead lt 1 dt 1, \
     datafile index 0 using 1:3 with points lt 1, \
     datafile index 0 using 1:4:($6-$1):(0) with vectors nohead lt 1 dt 2, \
     datafile index 0 using 1:4 with points lt 1, \
     datafile index 1 using 1:3 with lines lt 2 dt 1, \
     datafile index 1 using 1:3 with points lt 2, \
     datafile index 1 using 1:4 with lines lt 2 dt 2, \
     datafile index 1 using 1:4 with points lt 2, \
     16.0000 with lines lc rgb '#000000' dt 3 lw 1
# the key, inside the plot area where no data lie; box (screen) 0.2946 0.1818 0.4729 0.3818
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
set key at screen 0.2946, screen 0.3818 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with linespoints lt 1 dt 1 title "policy deepspeed-0.12"
set key at screen 0.2946, screen 0.3182 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with linespoints lt 2 dt 1 title "policy exact"
set key at screen 0.2946, screen 0.2545 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#c8c8c8' dt 1 lw 5 title 'honored = requested'
unset multiplot
