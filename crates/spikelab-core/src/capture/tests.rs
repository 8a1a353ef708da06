use super::transport;
use super::*;
use crate::pcapng;
use std::io::Cursor;

fn reader(bytes: &[u8]) -> Result<Reader<Cursor<Vec<u8>>>, Error> {
    Reader::new(Cursor::new(bytes.to_vec()), bytes.len() as u64)
}

/// Every frame of `bytes` as (ts_ns, linktype, iface, iface_name, direction, orig_len, data,
/// comment), and where the capture was cut short.
type Row = (u64, u32, u32, String, u8, u32, Vec<u8>, Vec<u8>);

fn frames(bytes: &[u8]) -> Result<(Vec<Row>, Option<u64>), Error> {
    let mut r = reader(bytes)?;
    let mut out = Vec::new();
    while let Some(f) = r.next_frame()? {
        out.push((
            f.ts_ns,
            f.linktype,
            f.iface,
            f.iface_name.to_string(),
            f.direction,
            f.orig_len,
            f.data.to_vec(),
            f.comment.to_vec(),
        ));
    }
    Ok((out, r.truncated_at()))
}

fn classic(big: bool, nano: bool, linktype: u32, records: &[(u64, &[u8], u32)]) -> Vec<u8> {
    let w = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::new();
    out.extend(w(if nano { 0xA1B2_3C4D } else { 0xA1B2_C3D4 }));
    out.extend(if big { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
    out.extend([0; 8]);
    out.extend(w(65535));
    out.extend(w(linktype));
    for &(ts, data, orig) in records {
        let (sec, frac) = (ts / 1_000_000_000, ts % 1_000_000_000);
        out.extend(w(sec as u32));
        out.extend(w(if nano { frac } else { frac / 1000 } as u32));
        out.extend(w(data.len() as u32));
        out.extend(w(orig));
        out.extend(data);
    }
    out
}

/// A pcapng block in either byte order.
fn block(big: bool, kind: u32, body: &[u8]) -> Vec<u8> {
    let w = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let total = 12 + body.len().div_ceil(4) * 4;
    let mut out = w(kind).to_vec();
    out.extend(w(total as u32));
    out.extend(body);
    out.resize(total - 4, 0);
    out.extend(w(total as u32));
    out
}

fn opt(big: bool, code: u16, v: &[u8]) -> Vec<u8> {
    let w = |x: u16| {
        if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        }
    };
    let mut out = w(code).to_vec();
    out.extend(w(v.len() as u16));
    out.extend(v);
    out.resize(4 + v.len().div_ceil(4) * 4, 0);
    out
}

fn section(big: bool, comment: &str) -> Vec<u8> {
    let mut body = if big {
        vec![0x1A, 0x2B, 0x3C, 0x4D, 0, 1, 0, 0]
    } else {
        vec![0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0]
    };
    body.extend([0xff; 8]);
    if !comment.is_empty() {
        body.extend(opt(big, 1, comment.as_bytes()));
    }
    body.extend([0; 4]);
    block(big, 0x0A0D_0D0A, &body)
}

fn interface(big: bool, linktype: u16, name: &str, tsresol: Option<u8>) -> Vec<u8> {
    let mut body = if big {
        linktype.to_be_bytes().to_vec()
    } else {
        linktype.to_le_bytes().to_vec()
    };
    body.extend([0, 0, 0, 0, 0xff, 0xff]);
    if !name.is_empty() {
        body.extend(opt(big, 2, name.as_bytes()));
    }
    if let Some(r) = tsresol {
        body.extend(opt(big, 9, &[r]));
    }
    block(big, 1, &body)
}

fn epb(big: bool, iface: u32, ticks: u64, data: &[u8], flags: u32, comment: &str) -> Vec<u8> {
    let w = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut body = w(iface).to_vec();
    body.extend(w((ticks >> 32) as u32));
    body.extend(w(ticks as u32));
    body.extend(w(data.len() as u32));
    body.extend(w(data.len() as u32 + 10));
    body.extend(data);
    body.resize(20 + data.len().div_ceil(4) * 4, 0);
    body.extend(opt(big, 2, &w(flags)));
    if !comment.is_empty() {
        body.extend(opt(big, 1, comment.as_bytes()));
    }
    block(big, 6, &body)
}

#[test]
fn classic_pcap_reads_in_either_byte_order_at_either_resolution() {
    let recs: [(u64, &[u8], u32); 2] = [
        (1_700_000_000_123_456_000, b"abc", 60),
        (1_700_000_001_000_001_000, b"", 0),
    ];
    let want: Vec<Row> = recs
        .iter()
        .map(|&(ts, d, o)| (ts, 1, 0, String::new(), 0, o, d.to_vec(), vec![]))
        .collect();
    for big in [false, true] {
        for nano in [false, true] {
            let (got, cut) = frames(&classic(big, nano, 1, &recs)).unwrap();
            assert_eq!((got, cut), (want.clone(), None), "big {big} nano {nano}");
        }
    }
    // Nanoseconds survive in the nanosecond format only.
    let ns: [(u64, &[u8], u32); 1] = [(5_000_000_789, b"x", 1)];
    assert_eq!(
        frames(&classic(true, true, 1, &ns)).unwrap().0[0].0,
        5_000_000_789
    );
    assert_eq!(
        frames(&classic(false, false, 1, &ns)).unwrap().0[0].0,
        5_000_000_000
    );
    // The link type's upper bits (FCS length) are not the link type.
    assert_eq!(
        frames(&classic(false, false, 0x1000_0071, &ns)).unwrap().0[0].1,
        113
    );
}

#[test]
fn a_classic_pcap_cut_inside_a_record_reads_the_records_before_it() {
    let recs: [(u64, &[u8], u32); 2] = [(1, b"abcdef", 6), (2, b"ghijkl", 6)];
    let whole = classic(false, true, 1, &recs);
    let (got, cut) = frames(&whole[..whole.len() - 3]).unwrap();
    assert_eq!((got.len(), cut), (1, Some(24 + 16 + 6)));
    let (got, cut) = frames(&whole[..24 + 10]).unwrap(); // inside the first record's header
    assert_eq!((got.len(), cut), (0, Some(24)));
}

#[test]
fn pcapng_of_either_byte_order_gives_names_resolutions_directions_and_comments() {
    for big in [false, true] {
        let mut f = section(big, "first");
        f.extend(interface(big, 1, "eth0", Some(9)));
        f.extend(interface(big, 101, "", None)); // microseconds by default
        f.extend(interface(big, 1, "bin", Some(0x80 | 10))); // 2^-10 s
        f.extend(epb(
            big,
            0,
            1_700_000_000_123_456_789,
            b"frame0",
            2,
            "pkt=0",
        ));
        f.extend(epb(big, 1, 1_700_000_000_123_456, b"frame1", 1, ""));
        f.extend(epb(big, 2, 1536, b"f2", 0, "drop pkt=1"));
        f.extend(block(big, 0xBAD, b"unknown blocks are skipped"));
        f.extend(section(big, "second")); // a new section: new interfaces
        f.extend(interface(big, 276, "lo", Some(3)));
        f.extend(epb(big, 0, 7, b"z", 3, ""));
        let mut r = reader(&f).unwrap();
        let mut got = vec![];
        while let Some(fr) = r.next_frame().unwrap() {
            got.push((
                fr.ts_ns,
                fr.linktype,
                fr.iface,
                fr.iface_name.to_string(),
                fr.direction,
            ));
            assert_eq!(fr.orig_len, fr.data.len() as u32 + 10);
        }
        assert_eq!(
            got,
            vec![
                (1_700_000_000_123_456_789, 1, 0, "eth0".into(), 2),
                (1_700_000_000_123_456_000, 101, 1, "".into(), 1),
                (1_500_000_000, 1, 2, "bin".into(), 0),
                (7_000_000, 276, 0, "lo".into(), 3),
            ],
            "big {big}"
        );
        assert_eq!((r.section_comment(), r.truncated_at()), ("first", None));
        let (rows, _) = frames(&f).unwrap();
        assert_eq!(rows[0].7, b"pkt=0");
        assert_eq!(rows[2].7, b"drop pkt=1");
    }
}

#[test]
fn the_shared_pcapng_writers_output_reads_back() {
    let mut buf = pcapng::header("{\"t0_ns\":1}", "test", &["a", "b"], 96);
    let frame: Vec<u8> = (0..200u8).collect();
    pcapng::packet(
        &mut buf,
        1,
        1_234_567_890_123,
        &frame,
        96,
        pcapng::OUTBOUND,
        "x",
    );
    let (rows, cut) = frames(&buf).unwrap();
    assert_eq!(cut, None);
    assert_eq!(
        rows,
        vec![(
            1_234_567_890_123,
            1,
            1,
            "b".to_string(),
            2,
            200,
            frame[..96].to_vec(),
            b"x".to_vec()
        )]
    );
}

#[test]
fn a_pcapng_cut_short_reads_its_complete_blocks() {
    let mut f = section(false, "");
    f.extend(interface(false, 1, "a", Some(9)));
    f.extend(epb(false, 0, 5, b"one", 1, ""));
    let whole = f.len();
    f.extend(epb(false, 0, 6, b"two", 1, ""));
    for cut in [whole + 4, whole + 20, f.len() - 1] {
        let (rows, at) = frames(&f[..cut]).unwrap();
        assert_eq!((rows.len(), at), (1, Some(whole as u64)), "cut at {cut}");
    }
}

fn err(bytes: &[u8]) -> String {
    match frames(bytes) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("read"),
    }
}

#[test]
fn malformed_captures_are_one_line_errors_naming_the_byte() {
    assert_eq!(err(b"ab"), "not a packet capture (too short)");
    assert_eq!(err(&[0; 64]), "not a pcap or pcapng file (magic 00000000)");
    assert_eq!(
        err(&classic(false, false, 1, &[])[..20]),
        "pcap header cut short"
    );
    let mut f = section(false, "");
    let shb = f.len() as u64;
    f.extend(epb(false, 3, 1, b"x", 0, ""));
    assert_eq!(
        err(&f),
        format!("byte {shb}: packet on undeclared interface 3")
    );
    let mut bad = section(false, "");
    bad.extend([1, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(err(&bad), format!("byte {shb}: bad pcapng block length 13"));
    let mut bom = section(false, "");
    bom[8] = 0;
    assert_eq!(err(&bom), "byte 0: bad pcapng byte-order magic");
    let mut lying = section(false, "");
    lying.extend(interface(false, 1, "", None));
    let at = lying.len();
    let mut e = epb(false, 0, 1, b"abcd", 0, "");
    e[20..24].copy_from_slice(&200u32.to_le_bytes()); // captured length past the block
    lying.extend(e);
    assert_eq!(
        err(&lying),
        format!("byte {at}: packet block's captured length 200 exceeds the 12 bytes it holds")
    );
    let mut far = section(false, "");
    far.extend(interface(false, 1, "", Some(0))); // seconds
    far.extend(epb(false, 0, u64::MAX / 2, b"", 0, ""));
    assert!(err(&far).ends_with("out of range"), "{}", err(&far));
}

fn tcp_frame(src: u8, sport: u16, seq: u32, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend([0x08, 0x00, 0x45, 0]);
    f.extend(((40 + payload) as u16).to_be_bytes());
    f.extend([0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, src, 10, 0, 0, 9]);
    f.extend(sport.to_be_bytes());
    f.extend(80u16.to_be_bytes());
    f.extend(seq.to_be_bytes());
    f.extend([0, 0, 0, 0, 0x50, 0x10, 1, 0, 0, 0, 0, 0]);
    f
}

#[test]
fn transport_columns_keep_one_interface_and_skip_the_emulators_drops() {
    let mut f = section(false, "meta");
    f.extend(interface(false, 1, "in", Some(9)));
    f.extend(interface(false, 1, "", Some(9)));
    f.extend(interface(false, 189, "usb", Some(9)));
    f.extend(epb(false, 0, 10, &tcp_frame(1, 1000, 5, 100), 2, ""));
    f.extend(epb(
        false,
        0,
        11,
        &tcp_frame(1, 1000, 105, 100),
        2,
        "drop pkt=1",
    ));
    f.extend(epb(false, 1, 12, &tcp_frame(2, 2000, 7, 10), 2, ""));
    f.extend(epb(false, 0, 13, &tcp_frame(3, 3000, 9, 0), 1, ""));
    f.extend(epb(false, 2, 14, b"usb", 0, ""));
    let all = transport::read(reader(&f).unwrap(), None).unwrap();
    assert_eq!(all.frames, 5);
    assert_eq!(all.other_links, vec![189]);
    assert_eq!(all.tcp.seq, vec![5, 7, 9]);
    assert_eq!(all.tcp.conn, vec![0, 1, 2]);
    assert_eq!(all.tcp.length, vec![100, 10, 0]);
    assert_eq!(all.tcp.ts_ns, vec![10, 12, 13]);
    assert_eq!(
        all.tcp_conns[0],
        transport::Conn {
            src: "10.0.0.1".into(),
            sport: 1000,
            dst: "10.0.0.9".into(),
            dport: 80
        }
    );
    assert_eq!((all.section_comment.as_str(), all.matched), ("meta", true));
    let one = transport::read(reader(&f).unwrap(), Some("in")).unwrap();
    assert_eq!(one.tcp.seq, vec![5, 9]);
    assert_eq!(one.iface_names, vec!["1", "in", "usb"]);
    let by_number = transport::read(reader(&f).unwrap(), Some("1")).unwrap();
    assert_eq!(by_number.tcp.seq, vec![7]);
    let none = transport::read(reader(&f).unwrap(), Some("eth9")).unwrap();
    assert!(!none.matched && none.tcp.seq.is_empty());
}
