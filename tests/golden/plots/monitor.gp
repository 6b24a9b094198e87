# ratiolab plot monitor (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.pdf'" THIS.gp to rename)
# Paper size: 7.0 in x 2.84 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "monitor.pdf"
datafile = "monitor.dat"
set terminal pdfcairo size 7.00in,2.84in font ',9' linewidth 1
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
set lmargin at screen 0.0714
set rmargin at screen 0.9786
set tmargin at screen 0.9296
set bmargin at screen 0.2113
unset ylabel
set label 90 "memory (GiB)" at screen 0.0114, screen 0.5704 center rotate by 90
set xlabel 'time (s)' offset 0,0.9
set xrange [0:1.515]
set xtics 0.25 format '%.2f'
set yrange [0:8]
set ytics 2 format '%g'
unset key
set arrow 1 from 0.4000, graph 0 to 0.4000, graph 1 nohead lc rgb '#555555' dt 3 lw 0.8 back
set label 1 '1' at 0.4000, graph 1 center offset 0,0.6 font ',8'
set arrow 2 from 0.9000, graph 0 to 0.9000, graph 1 nohead lc rgb '#555555' dt 3 lw 0.8 back
set label 2 '2' at 0.9000, graph 1 center offset 0,0.6 font ',8'
plot datafile index 0 using 1:2 with lines lt 1 dt 1, \
     datafile index 1 using 1:2 with lines lt 2 dt 1, \
     datafile index 1 using 1:3 with lines lt 2 dt 2, \
     datafile index 1 using 1:4 with lines lt 2 dt 3, \
     datafile index 2 using 1:2 with lines lt 3 dt 1, \
     datafile index 2 using 1:3 with lines lt 3 dt 2, \
     datafile index 2 using 1:4 with lines lt 3 dt 3
# the key, inside the plot area where no data lie; box (screen) 0.0771 0.6127 0.2691 0.9155
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
set key at screen 0.0771, screen 0.9155 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lt 1 dt 1 title "launcher 4100"
set key at screen 0.0771, screen 0.8662 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lt 2 dt 1 title "rank 0 (python 4101)"
set key at screen 0.0771, screen 0.8169 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lt 3 dt 1 title "rank 1 (py,worker 4102)"
set key at screen 0.0771, screen 0.7676 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 1 title 'resident (RSS)'
set key at screen 0.0771, screen 0.7183 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 2 title 'GPU (NVML)'
set key at screen 0.0771, screen 0.6690 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 3 title 'locked + pinned host'
# the marks' texts, numbered as at the top of the panel, in a strip under it; box (screen) 0.0149 0.0141 0.9851 0.0704
unset key
set label 1000 "marks (dotted, numbered at the top):" at screen 0.0220, screen 0.0423 left
set label 1001 "1: [INFO] After creating fp16 partitions: 1" at screen 0.3117, screen 0.0423 left
set label 1002 "2: [INFO] After initializing optimizer states" at screen 0.6494, screen 0.0423 left
plot NaN notitle
unset multiplot
