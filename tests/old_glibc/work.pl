# Allocation- and CPU-heavy perl for old_glibc_test: builds, sorts and
# digests strings, prints a checksum. With "hold FIFO_IN FIFO_OUT" it then
# says "ready PID" on FIFO_OUT and waits for a line on FIFO_IN before exiting,
# so the collector can read /proc/PID/root while the process is alive.
use strict;
use warnings;
$| = 1;
my %words;
my $sum = 0;
for my $round (1 .. 6) {
  for my $i (1 .. 60000) {
    my $key = join("-", $round, $i, "x" x ($i % 97));
    $words{$key} = length($key) * $round;
  }
  for my $key (sort keys %words) {
    $sum = ($sum * 31 + $words{$key}) % 1000000007;
  }
  %words = ();
}
print "checksum $sum\n";
if (@ARGV && $ARGV[0] eq "hold") {
  open(my $ready, ">", $ARGV[2]) or die "ready: $!";
  print $ready "ready $$\n";
  close($ready);
  open(my $release, "<", $ARGV[1]) or die "release: $!";
  my $line = <$release>;
}
