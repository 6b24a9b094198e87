# ratiolab plot time (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 7.0 in x 2.45 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "time.png"
datafile = "time.dat"
set terminal pngcairo size 1400,490 font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 background '#ffffff'
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
set multiplot title "gpt-2.7b, 8 x V100" font ',10'
set style fill solid 1.0 noborder
set xlabel 'requested ratio' offset 0,0.9
set xrange [-0.04:1.04]
set xtics 0.2 format '%.1f'
set yrange [0:2]
set ytics 0, 0.5, 2 format '%.1f'
unset key
set lmargin at screen 0.0714
set rmargin at screen 0.4786
set tmargin at screen 0.8082
set bmargin at screen 0.1469
unset object
unset arrow
unset label
unset ylabel
set label 90 "step time (s)" at screen 0.0114, screen 0.4776 center rotate by 90
set title "policy deepspeed-0.12" . ", " . "DeepSpeed\047s sequential step"
set arrow 3 from graph 0, first 0.313582 to graph 1, first 0.313582 nohead lc rgb '#000000' dt 2 lw 1 front
unset y2tics
unset y2label
set object 1 rect from -0.0400, graph 0 to 0.3750, graph 1 fc rgb '#ececec' fs solid 1.0 noborder behind
set arrow 1 from 0.5000, first 1.755904 to 0.5000, first 1.545904 head size screen 0.012,25 filled lw 1.2 lc rgb '#000000' front
set label 2 "fastest that fits: 0.50 (1.52 s)" at graph 0.5000, first 1.835904 center front
plot datafile index 0 using 1:((0+$5)/2):($1-0.1000):($1+0.1000):(0):5 with boxxyerror fc rgb '#0072B2' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($5+$6)/2):($1-0.1000):($1+0.1000):($5):6 with boxxyerror fc rgb '#CC79A7' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($6+$7)/2):($1-0.1000):($1+0.1000):($6):7 with boxxyerror fc rgb '#D55E00' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($7+$8)/2):($1-0.1000):($1+0.1000):($7):8 with boxxyerror fc rgb '#009E73' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($8+$9)/2):($1-0.1000):($1+0.1000):($8):9 with boxxyerror fc rgb '#E69F00' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($9+$10)/2):($1-0.1000):($1+0.1000):($9):10 with boxxyerror fc rgb '#777777' fs pattern 5 noborder
set lmargin at screen 0.5714
set rmargin at screen 0.9786
set tmargin at screen 0.8082
set bmargin at screen 0.1469
unset object
unset arrow
unset label
unset ylabel
set label 90 "step time (s)" at screen 0.5114, screen 0.4776 center rotate by 90
set title "policy exact" . ", " . "overlapped step (ratiolab)"
set arrow 3 from graph 0, first 0.106315 to graph 1, first 0.106315 nohead lc rgb '#000000' dt 2 lw 1 front
unset y2tics
unset y2label
set object 1 rect from -0.0400, graph 0 to 0.1250, graph 1 fc rgb '#ececec' fs solid 1.0 noborder behind
set arrow 1 from 0.2500, first 0.468180 to 0.2500, first 0.258180 head size screen 0.012,25 filled lw 1.2 lc rgb '#000000' front
set label 2 "fastest that fits: 0.25 (0.23 s)" at graph 0.0200, first 0.548180 left front
plot datafile index 1 using 1:((0+$5)/2):($1-0.1000):($1+0.1000):(0):5 with boxxyerror fc rgb '#0072B2' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($5+$6)/2):($1-0.1000):($1+0.1000):($5):6 with boxxyerror fc rgb '#CC79A7' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($6+$7)/2):($1-0.1000):($1+0.1000):($6):7 with boxxyerror fc rgb '#D55E00' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($7+$8)/2):($1-0.1000):($1+0.1000):($7):8 with boxxyerror fc rgb '#009E73' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($8+$9)/2):($1-0.1000):($1+0.1000):($8):9 with boxxyerror fc rgb '#E69F00' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($9+$10)/2):($1-0.1000):($1+0.1000):($9):10 with boxxyerror fc rgb '#777777' fs pattern 5 noborder
# the key, inside the plot area where no data lie; box (screen) 0.6694 0.5551 0.9729 0.7918
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
set key at screen 0.6694, screen 0.7918 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#0072B2' fs solid 1.0 title "compute"
set key at screen 0.8014, screen 0.7918 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#CC79A7' fs solid 1.0 title "collectives"
set key at screen 0.6694, screen 0.7347 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#D55E00' fs solid 1.0 title "PCIe copies"
set key at screen 0.8014, screen 0.7347 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#009E73' fs solid 1.0 title "GPU optimizer"
set key at screen 0.6694, screen 0.6776 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#E69F00' fs solid 1.0 title "CPU optimizer"
set key at screen 0.8014, screen 0.6776 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#777777' fs pattern 5 border lc rgb '#777777' title "idle"
set key at screen 0.8014, screen 0.6204 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 2 lw 1 title 'ratio 0 (no offload)'
set key at screen 0.6694, screen 0.6204 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#ececec' fs solid 1.0 border lc rgb '#aaaaaa' title "over 12 GiB"
unset multiplot
