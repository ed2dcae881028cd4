# SPDX-License-Identifier: GPL-2.0
# The chart of tools/bench/memory.sh: memory of one controller (slab and
# per-CPU, and all pages in use), ours and the in-tree nvme_rdma, per
# CPU count (online-possible).
#   gnuplot -e "dir='RESULT_DIR'" tools/bench/memory.gp
set terminal pngcairo size 900,480 noenhanced
set output dir.'/memory.png'
set title 'Memory of one controller: nvme-rdma-p2p against in-tree nvme_rdma'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'KiB'
set xlabel 'CPUs online-possible'
set key top left
set grid ytics
plot dir.'/memory.dat' using 2:xtic(1) title 'ours: slab + per-CPU', \
     '' using 3 title 'in-tree: slab + per-CPU', \
     '' using 4 title 'ours: pages in use', \
     '' using 5 title 'in-tree: pages in use'
