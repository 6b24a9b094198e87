# ratiolab plot scaling (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 3.5 in x 2.20 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "scaling.png"
datafile = "scaling.dat"
set terminal pngcairo size 700,440 font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 background '#ffffff'
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
set lmargin at screen 0.1571
set rmargin at screen 0.9571
set tmargin at screen 0.9636
set bmargin at screen 0.1636
unset ylabel
set label 90 "tokens/s, all GPUs (thousands)" at screen 0.0229, screen 0.5636 center rotate by 90
set xlabel 'GPUs' offset 0,0.9
set yrange [0:500]
set ytics 100 format '%g'
unset key
ys = 0.001
set xrange [7.04:16.96]
set xtics ('8' 8, '16' 16)
set label 300 "r=0, cpu offload on" at 8, 52.247889 left offset screen -0.0114, screen -0.0591 font ',7' tc lt 1 front
set label 301 "r=0, offload config unknown" at 16, 115.560078 right offset screen 0.0114, screen 0.0591 font ',7' tc lt 1 front
set label 316 "r=0, cpu offload on" at 8, 154.107787 left offset screen -0.0114, screen -0.0591 font ',7' tc lt 2 front
set label 317 "r=0, offload config unknown" at 16, 182.133276 right offset screen 0.0114, screen 0.0591 font ',7' tc lt 2 front
plot datafile index 0 using 1:($2*ys) with linespoints lt 1, \
     datafile index 0 using 1:($5*ys) with lines lt 1 dt 3 lw 0.8, \
     datafile index 1 using 1:($2*ys) with linespoints lt 2, \
     datafile index 1 using 1:($5*ys) with lines lt 2 dt 3 lw 0.8
# the key, inside the plot area where no data lie; box (screen) 0.2463 0.7455 0.9457 0.9455
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
set key at screen 0.2463, screen 0.8182 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 3 lw 0.8 title 'ideal scaling (dotted, per series)'
set key at screen 0.2463, screen 0.9455 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with linespoints lt 1 title "policy deepspeed-0.12, schedule deepspeed-0.12"
set key at screen 0.2463, screen 0.8818 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with linespoints lt 2 title "policy exact, schedule overlap"
unset multiplot
