# ratiolab plot parity (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 3.5 in x 3.21 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "fig4-parity.png"
datafile = "fig4-parity.dat"
set terminal pngcairo size 700,642 font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 background '#ffffff'
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
set lmargin at screen 0.1429
set rmargin at screen 0.9286
set tmargin at screen 0.9688
set bmargin at screen 0.1121
set label 90 'measured (ms)' at screen 0.0229, screen 0.5405 center rotate by 90
set xlabel 'predicted (ms)' offset 0,0.9
set logscale xy
set xrange [0.000195333:208952]
set yrange [6.13195e-06:6559.48]
set grid xtics ytics
set samples 200
band = 0.1
set xtics ('' 0.0002 1, '' 0.0005 1, '' 0.001 1, '' 0.002 1, '' 0.005 1, '0.01' 0.01, '' 0.02 1, '' 0.05 1, '' 0.1 1, '' 0.2 1, '' 0.5 1, '1' 1, '' 2 1, '' 5 1, '' 10 1, '' 20 1, '' 50 1, '100' 100, '' 200 1, '' 500 1, '' 1000 1, '' 2000 1, '' 5000 1, '10000' 10000, '' 20000 1, '' 50000 1, '' 100000 1, '' 200000 1)
set ytics ('' 1e-05 1, '' 2e-05 1, '' 5e-05 1, '0.0001' 0.0001, '' 0.0002 1, '' 0.0005 1, '' 0.001 1, '' 0.002 1, '' 0.005 1, '0.01' 0.01, '' 0.02 1, '' 0.05 1, '' 0.1 1, '' 0.2 1, '' 0.5 1, '1' 1, '' 2 1, '' 5 1, '' 10 1, '' 20 1, '' 50 1, '100' 100, '' 200 1, '' 500 1, '' 1000 1, '' 2000 1, '' 5000 1)
unset key
plot '+' using 1:($1*(1-band)):($1*(1+band)) with filledcurves fc rgb '#b8b8b8' fs solid 0.6 title '±10 %', \
     x with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted', \
     datafile index 0 using 2:3 with points pt 7 ps 0.8 lc rgb '#000000' title 'step', \
     datafile index 1 using 2:3 with points pt 5 ps 0.7 lc rgb '#0072B2' title "forward", \
     datafile index 2 using 2:3 with points pt 9 ps 0.7 lc rgb '#0072B2' title "backward", \
     datafile index 3 using 2:3 with points pt 11 ps 0.7 lc rgb '#009E73' title "gpu_adam", \
     datafile index 4 using 2:3 with points pt 13 ps 0.7 lc rgb '#E69F00' title "cpu_adam", \
     datafile index 5 using 2:3 with points pt 4 ps 0.7 lc rgb '#CC79A7' title "allgather", \
     datafile index 6 using 2:3 with points pt 6 ps 0.7 lc rgb '#CC79A7' title "reduce_scatter", \
     datafile index 7 using 2:3 with points pt 8 ps 0.7 lc rgb '#D55E00' title "grad_d2h", \
     datafile index 8 using 2:3 with points pt 10 ps 0.7 lc rgb '#D55E00' title "param_h2d"
# the key, inside the plot area where no data lie; box (screen) 0.5743 0.1246 0.9171 0.6106
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
set key at screen 0.5743, screen 0.6106 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#b8b8b8' fs solid 0.6 title '±10 %'
set key at screen 0.5743, screen 0.5670 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted'
set key at screen 0.5743, screen 0.5234 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 7 ps 0.8 lc rgb '#000000' title 'step'
set key at screen 0.5743, screen 0.4798 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 5 ps 0.7 lc rgb '#0072B2' title "forward"
set key at screen 0.5743, screen 0.4361 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 9 ps 0.7 lc rgb '#0072B2' title "backward"
set key at screen 0.5743, screen 0.3925 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 11 ps 0.7 lc rgb '#009E73' title "gpu_adam"
set key at screen 0.5743, screen 0.3489 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 13 ps 0.7 lc rgb '#E69F00' title "cpu_adam"
set key at screen 0.5743, screen 0.3053 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 4 ps 0.7 lc rgb '#CC79A7' title "allgather"
set key at screen 0.5743, screen 0.2617 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 6 ps 0.7 lc rgb '#CC79A7' title "reduce_scatter"
set key at screen 0.5743, screen 0.2181 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 8 ps 0.7 lc rgb '#D55E00' title "grad_d2h"
set key at screen 0.5743, screen 0.1745 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 10 ps 0.7 lc rgb '#D55E00' title "param_h2d"
unset multiplot
