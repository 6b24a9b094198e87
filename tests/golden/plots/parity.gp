# ratiolab plot parity (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.pdf'" THIS.gp to rename)
# Paper size: 3.5 in x 3.21 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "parity.pdf"
datafile = "parity.dat"
set terminal pdfcairo size 3.50in,3.21in font ',9' linewidth 1
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
set xrange [3.33333:393]
set yrange [3.33333:393]
set grid xtics ytics
set samples 200
band = 0.1
set xtics ('5' 5, '10' 10, '20' 20, '50' 50, '100' 100, '200' 200)
set ytics ('5' 5, '10' 10, '20' 20, '50' 50, '100' 100, '200' 200)
unset key
plot '+' using 1:($1*(1-band)):($1*(1+band)) with filledcurves fc rgb '#b8b8b8' fs solid 0.6 title '±10 %', \
     x with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted', \
     datafile index 0 using 2:3 with points pt 7 ps 0.8 lc rgb '#000000' title 'step', \
     datafile index 1 using 2:3 with points pt 5 ps 0.7 lc rgb '#0072B2' title "forward", \
     datafile index 2 using 2:3 with points pt 9 ps 0.7 lc rgb '#0072B2' title "backward", \
     datafile index 3 using 2:3 with points pt 11 ps 0.7 lc rgb '#009E73' title "gpu_adam", \
     datafile index 4 using 2:3 with points pt 13 ps 0.7 lc rgb '#E69F00' title "cpu_adam", \
     datafile index 5 using 2:3 with points pt 4 ps 0.7 lc rgb '#D55E00' title "grad_d2h"
# the key, inside the plot area where no data lie; box (screen) 0.1543 0.6012 0.4971 0.9564
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
set key at screen 0.1543, screen 0.9564 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#b8b8b8' fs solid 0.6 title '±10 %'
set key at screen 0.1543, screen 0.9128 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted'
set key at screen 0.1543, screen 0.8692 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 7 ps 0.8 lc rgb '#000000' title 'step'
set key at screen 0.1543, screen 0.8255 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 5 ps 0.7 lc rgb '#0072B2' title "forward"
set key at screen 0.1543, screen 0.7819 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 9 ps 0.7 lc rgb '#0072B2' title "backward"
set key at screen 0.1543, screen 0.7383 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 11 ps 0.7 lc rgb '#009E73' title "gpu_adam"
set key at screen 0.1543, screen 0.6947 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 13 ps 0.7 lc rgb '#E69F00' title "cpu_adam"
set key at screen 0.1543, screen 0.6511 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with points pt 4 ps 0.7 lc rgb '#D55E00' title "grad_d2h"
unset multiplot
