# SPDX-License-Identifier: GPL-2.0
# The chart of `make bench`: gnuplot -e "dir='RESULT_DIR'" chart.gp
# Reads RESULT_DIR/chart-*.dat (written by reduce.py), writes results.png.
#
# Left: ours and nvme_tcp relative to the in-tree nvme_rdma, per profile
# and metric, normalised so that 1 is the in-tree median and more is
# better (latency, time and CPU are inverted); whiskers span the runs.
# Log scale: 2x better and 2x worse are the same distance from 1.
# Right (when the checkpoint ran): the GPU checkpoint paths, each metric
# relative to its largest value (absolute values in the labels); less is
# better.
modes = system("sed -n 's/^# modes: //p' ".dir."/chart-checkpoint.dat 2>/dev/null")
n = words(modes)
nt = int(system("grep -vc '^#' ".dir."/chart-transports.dat 2>/dev/null || true"))

left = (nt > 0 ? (n > 0 ? 0.62 : 1) : 0)
set terminal pngcairo size (nt > 0 && n > 0 ? 1700 : 1100),780 font "Sans,10" noenhanced
set output dir.'/results.png'
set multiplot title "nvme-rdma-p2p bench in a QEMU TCG guest over soft-RoCE (numbers: results.md)" font "Sans,12"

if (nt > 0) {
set size left,0.95
set origin 0,0
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.75 border -1
set key top left
set grid ytics
set xtics rotate by -40 scale 0 font "Sans,8"
set logscale y 2
set yrange [0.125:8]
set ylabel "relative to the in-tree nvme_rdma (1 = same, > 1 better, log scale)"
set title "Transports: median, whiskers span the runs"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb "black" front
plot dir.'/chart-transports.dat' using 2:3:4:xtic(1) title "ours (rdma_p2p)" lc rgb "#1f77b4", \
     '' using 5:6:7 title "nvme_tcp (reference)" lc rgb "#bbbbbb"
unset arrow 1
}

if (n > 0) {
	set size 1 - left,0.95
	set origin left,0
	set style data histogram
	set style fill solid 0.75 border -1
	set grid ytics
	unset logscale y
	set style histogram clustered gap 2
	set ylabel "relative to the largest (less is better)"
	set yrange [0:1.15]
	set xtics rotate by 0 font "Sans,8"
	set key top right
	set title "GPU-memory checkpoint: P2P against bouncing through host memory"
	colors = "#1f77b4 #ff7f0e #888888 #2ca02c"
	plot for [i=1:n] dir.'/chart-checkpoint.dat' using (column(i + 1)):xtic(1) \
		title word(modes, i) lc rgb word(colors, i)
}
unset multiplot
