# Loss curve of the demo model.  Usage (repo root):
#   gnuplot -e "csv='data/train-out/loss.csv'; out='data/train-out/loss'" tools/train/plot_loss.gp
# Writes out.svg and out.png.  CSV columns: step,tokens,epoch,lr,train_loss,heldout_loss,elapsed_s
if (!exists("csv")) csv = 'data/train-out/loss.csv'
if (!exists("out")) out = 'data/train-out/loss'
set datafile separator ','
set key autotitle columnhead
set xlabel 'step (64 x 256 tokens each)'
set ylabel 'cross-entropy (nats/token)'
set title 'plumb demo model (Llama, 8.0 M params): train vs held-out loss'
set grid
set yrange [3:8.5]
set key top right
set style data lines
do for [t in "svg pngcairo"] {
  if (t eq "svg") { set terminal svg size 900,560 dynamic font 'sans,12'; set output out.'.svg' } \
  else { set terminal pngcairo size 900,560 font 'sans,11'; set output out.'.png' }
  plot csv using 1:5 title 'train (mean over 20 steps, dropout on)' lw 1.5 lc rgb '#1f77b4', \
       csv using 1:($6 > 0 ? $6 : 1/0) with linespoints title 'held-out' lw 2 pt 7 ps 0.5 lc rgb '#d62728'
  set output
}
