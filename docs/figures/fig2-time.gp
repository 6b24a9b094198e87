# ratiolab plot time (ratiolab 0.1.0): draws the figure named by outfile from the data in datafile (both set below).
# Run from this folder: gnuplot THIS.gp   (gnuplot -e "outfile='other.png'" THIS.gp to rename)
# Paper size: 7.0 in x 2.20 in; font ',9', which pdfcairo draws as 6 pt text.
if (!exists("outfile")) outfile = "fig2-time.png"
datafile = "fig2-time.dat"
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
set style fill solid 1.0 noborder
set xlabel 'requested ratio' offset 0,0.9
set xrange [-0.04:1.04]
set xtics 0.2 format '%.1f'
set yrange [0:3]
set ytics 0, 0.5, 2.5 format '%.1f'
unset key
set lmargin at screen 0.0714
set rmargin at screen 0.4114
set tmargin at screen 0.9000
set bmargin at screen 0.1636
unset object
unset arrow
unset label
unset ylabel
set label 90 "step time (s)" at screen 0.0114, screen 0.5318 center rotate by 90
set title "policy deepspeed-0.12" . ", " . "DeepSpeed\047s sequential step"
set arrow 3 from graph 0, first 0.763592 to graph 1, first 0.763592 nohead lc rgb '#000000' dt 2 lw 1 front
set y2range [0:3]
set y2tics out nomirror ("0.5" 1.527184, "0.75" 1.018123, "1" 0.763592, "1.5" 0.509061, "3" 0.254531)
set y2label "speedup over ratio 0 (no offload)" offset -1,0
set object 1 rect from -0.0400, graph 0 to 0.4750, graph 1 fc rgb '#ececec' fs solid 1.0 noborder behind
set arrow 1 from 0.5000, first 2.604667 to 0.5000, first 2.289667 head size screen 0.012,25 filled lw 1.2 lc rgb '#000000' front
set label 2 "fastest that fits: 0.50 (2.24 s)" at graph 0.5000, first 2.724667 center front
plot datafile index 0 using 1:((0+$5)/2):($1-0.0200):($1+0.0200):(0):5 with boxxyerror fc rgb '#0072B2' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($5+$6)/2):($1-0.0200):($1+0.0200):($5):6 with boxxyerror fc rgb '#CC79A7' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($6+$7)/2):($1-0.0200):($1+0.0200):($6):7 with boxxyerror fc rgb '#D55E00' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($7+$8)/2):($1-0.0200):($1+0.0200):($7):8 with boxxyerror fc rgb '#009E73' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($8+$9)/2):($1-0.0200):($1+0.0200):($8):9 with boxxyerror fc rgb '#E69F00' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($9+$10)/2):($1-0.0200):($1+0.0200):($9):10 with boxxyerror fc rgb '#56B4E9' fs solid 1.0 noborder, \
     datafile index 0 using 1:(($10+$11)/2):($1-0.0200):($1+0.0200):($10):11 with boxxyerror fc rgb '#777777' fs pattern 5 noborder
set lmargin at screen 0.5714
set rmargin at screen 0.9114
set tmargin at screen 0.9000
set bmargin at screen 0.1636
unset object
unset arrow
unset label
unset ylabel
set label 90 "step time (s)" at screen 0.5114, screen 0.5318 center rotate by 90
set title "policy exact" . ", " . "overlapped step (ratiolab)"
set arrow 3 from graph 0, first 0.297506 to graph 1, first 0.297506 nohead lc rgb '#000000' dt 2 lw 1 front
set y2range [0:3]
set y2tics out nomirror ("0.1" 2.975058, "0.2" 1.487529, "0.25" 1.190023, "0.5" 0.595012, "1" 0.297506)
set y2label "speedup over ratio 0 (no offload)" offset -1,0
set object 1 rect from -0.0400, graph 0 to 0.3250, graph 1 fc rgb '#ececec' fs solid 1.0 noborder behind
set arrow 1 from 0.3500, first 0.852621 to 0.3500, first 0.537621 head size screen 0.012,25 filled lw 1.2 lc rgb '#000000' front
set label 2 "fastest that fits: 0.35 (0.49 s)" at graph 0.3611, first 0.972621 center front
plot datafile index 1 using 1:((0+$5)/2):($1-0.0200):($1+0.0200):(0):5 with boxxyerror fc rgb '#0072B2' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($5+$6)/2):($1-0.0200):($1+0.0200):($5):6 with boxxyerror fc rgb '#CC79A7' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($6+$7)/2):($1-0.0200):($1+0.0200):($6):7 with boxxyerror fc rgb '#D55E00' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($7+$8)/2):($1-0.0200):($1+0.0200):($7):8 with boxxyerror fc rgb '#009E73' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($8+$9)/2):($1-0.0200):($1+0.0200):($8):9 with boxxyerror fc rgb '#E69F00' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($9+$10)/2):($1-0.0200):($1+0.0200):($9):10 with boxxyerror fc rgb '#56B4E9' fs solid 1.0 noborder, \
     datafile index 1 using 1:(($10+$11)/2):($1-0.0200):($1+0.0200):($10):11 with boxxyerror fc rgb '#777777' fs pattern 5 noborder
# the key, inside the plot area where no data lie; box (screen) 0.5817 0.5545 0.9057 0.8818
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
set key at screen 0.5817, screen 0.8818 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#0072B2' fs solid 1.0 title "compute"
set key at screen 0.7617, screen 0.8818 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#CC79A7' fs solid 1.0 title "collectives"
set key at screen 0.5817, screen 0.8182 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#D55E00' fs solid 1.0 title "PCIe copies"
set key at screen 0.7617, screen 0.8182 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#009E73' fs solid 1.0 title "GPU optimizer"
set key at screen 0.5817, screen 0.7545 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#E69F00' fs solid 1.0 title "CPU optimizer"
set key at screen 0.7617, screen 0.7545 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#56B4E9' fs solid 1.0 title "casts and checks"
set key at screen 0.5817, screen 0.6909 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#777777' fs pattern 5 border lc rgb '#777777' title "idle"
set key at screen 0.5817, screen 0.6273 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with lines lc rgb '#000000' dt 2 lw 1 title 'ratio 0 (no offload)'
set key at screen 0.7617, screen 0.6909 left top Left reverse samplen 2 spacing 1 noautotitle
plot NaN with boxes fc rgb '#ececec' fs solid 1.0 border lc rgb '#aaaaaa' title "over 16 GiB"
unset multiplot
