//! `spikelab-emu CONFIG.json [T0_NS]`: the emulator as a standalone program.
//!
//! Opens the sockets, prints `ready`, then starts at `T0_NS` (CLOCK_REALTIME ns) if given, or
//! at the number it reads from stdin, and runs to the scenario's end (or SIGINT / SIGTERM).
//! Prints the run's statistics as JSON. `spikelab emulate` does the same through the Python
//! extension, so a pip-installed spikelab needs no separate binary.

#[cfg(target_os = "linux")]
fn main() {
    use std::io::{BufRead, Write};
    let args: Vec<String> = std::env::args().collect();
    let fail = |msg: String| -> ! {
        eprintln!("spikelab-emu: error: {msg}");
        std::process::exit(2)
    };
    if args.len() < 2 || args.len() > 3 {
        fail("usage: spikelab-emu CONFIG.json [T0_NS]".into());
    }
    let text =
        std::fs::read_to_string(&args[1]).unwrap_or_else(|e| fail(format!("{}: {e}", args[1])));
    let cfg = spikelab_emu::EmuConfig::from_json(&text).unwrap_or_else(|e| fail(e));
    let engine = spikelab_emu::rt::Engine::open(cfg).unwrap_or_else(|e| fail(e));
    println!("ready");
    let _ = std::io::stdout().flush();
    let t0: u64 = match args.get(2) {
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| fail(format!("bad T0_NS {s:?}"))),
        None => {
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            line.trim()
                .parse()
                .unwrap_or_else(|_| fail(format!("bad start time {line:?}")))
        }
    };
    let stats = engine.run(t0).unwrap_or_else(|e| fail(e));
    println!("{}", serde_json::to_string(&stats).expect("serialisable"));
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("spikelab-emu: error: the emulator needs Linux (AF_PACKET, network namespaces)");
    std::process::exit(2);
}
