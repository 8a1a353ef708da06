# ns-2.35 side of crates/spikelab-sim/tests/sctp_ns2.rs, the multihomed failover.
# usage (from this directory): ns multi.tcl 100
# (trace-all is needed: without it, or with traced variables, ns-2.35's multihomed routing
# fails with "no target for slot -1".)
set ns [new Simulator]
set allchan [open /dev/null w]
$ns trace-all $allchan
set h0 [$ns node]
set h0a [$ns node]
set h0b [$ns node]
$ns multihome-add-interface $h0 $h0a
$ns multihome-add-interface $h0 $h0b
set h1 [$ns node]
set h1a [$ns node]
set h1b [$ns node]
$ns multihome-add-interface $h1 $h1a
$ns multihome-add-interface $h1 $h1b
$ns duplex-link $h0a $h1a 10Mb 20ms DropTail
$ns duplex-link $h0b $h1b 10Mb 30ms DropTail
$ns queue-limit $h0a $h1a 100
$ns queue-limit $h0b $h1b 100
set qa [$ns monitor-queue $h0a $h1a ""]
set qb [$ns monitor-queue $h0b $h1b ""]
set em [new ErrorModel]
$em set rate_ 0.0
$em unit pkt
$ns link-lossmodel $em $h0a $h1a
set s0 [new Agent/SCTP]
$ns multihome-attach-agent $h0 $s0
set s1 [new Agent/SCTP]
$ns multihome-attach-agent $h1 $s1
$ns connect $s0 $s1
$s0 set-primary-destination $h1a
set ftp [new Application/FTP]
$ftp attach-agent $s0
$ns at 0.5 "$ftp start"
$ns at 5.0 "$em set rate_ 1.0"
source poll.tcl
set END [lindex $argv 0]
proc finish {} {
    global ns s0 qa qb
    puts "timeouts [$s0 set timeoutCount_] fr [$s0 set frCount_] primary: arrivals [$qa set parrivals_] alternate: arrivals [$qb set parrivals_]"
    exit 0
}
$ns at $END "finish"
$ns run
