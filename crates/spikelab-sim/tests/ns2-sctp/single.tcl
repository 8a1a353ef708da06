# ns-2.35 side of crates/spikelab-sim/tests/sctp_ns2.rs, single-homed.
# usage (from this directory): ns single.tcl spike | ns single.tcl overflow
set mode [lindex $argv 0]
set ns [new Simulator]
set n0 [$ns node]
set n1 [$ns node]
$ns duplex-link $n0 $n1 10Mb 20ms DropTail
if {$mode == "overflow"} {
    $ns queue-limit $n0 $n1 8
} else {
    $ns queue-limit $n0 $n1 100
}
set qm [$ns monitor-queue $n0 $n1 ""]
set s0 [new Agent/SCTP]
$ns attach-agent $n0 $s0
set s1 [new Agent/SCTP]
$ns attach-agent $n1 $s1
$ns connect $s0 $s1
set ftp [new Application/FTP]
$ftp attach-agent $s0
$ns at 0.5 "$ftp start"
set dl [[$ns link $n0 $n1] link]
if {$mode == "spike"} {
    $ns at 5.0 "$dl set delay_ 1.5"
    $ns at 5.5 "$dl set delay_ 0.02"
}
source poll.tcl
proc finish {} {
    global ns s0 qm
    puts "timeouts [$s0 set timeoutCount_] fr [$s0 set frCount_] arrivals [$qm set parrivals_] departures [$qm set pdepartures_] drops [$qm set pdrops_]"
    exit 0
}
$ns at 20.0 "finish"
$ns run
