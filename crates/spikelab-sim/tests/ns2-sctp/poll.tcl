# Prints the time of each change of the sender's timeoutCount_ and frCount_ (10 ms steps).
# timeoutCount_ starts at 1 (or 2 when multihomed): Reset() bumps it to trigger its trace.
proc poll {} {
    global ns s0 lastto lastfr
    set to [$s0 set timeoutCount_]
    set fr [$s0 set frCount_]
    if {$to != $lastto || $fr != $lastfr} { puts "t=[format %.2f [$ns now]] timeouts=$to fr=$fr" }
    set lastto $to; set lastfr $fr
    $ns at [expr [$ns now] + 0.01] "poll"
}
set lastto 0; set lastfr 0
$ns at 0.01 "poll"
