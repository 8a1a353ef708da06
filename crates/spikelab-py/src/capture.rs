//! Packet captures for Python: `capture_transport` (the TCP and SCTP header columns a trace
//! import reads) and `capture_frames` (every frame), both read in Rust as a stream
//! (`spikelab_core::capture`) without the GIL, handed over as little-endian column buffers
//! that `spikelab.traces.pcap` wraps as numpy arrays and Arrow tables. Registered by
//! [`register`].

use super::le_view;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use spikelab_core::capture::{self, transport, Reader};
use std::path::Path;

create_exception!(
    _core,
    CaptureError,
    PyValueError,
    "A capture that cannot be read; one line naming the file and the byte: `x.pcap: byte 24: bad pcapng block length 13`."
);

/// A reading error as a Python exception naming `path`: an OSError for the file itself, a
/// CaptureError for its content.
fn capture_err(path: &str, e: capture::Error) -> PyErr {
    match e {
        capture::Error::Io(io) => {
            let msg = io.to_string();
            let strerror = msg.split(" (os error").next().unwrap_or(&msg).to_string();
            match io.raw_os_error() {
                Some(errno) => PyOSError::new_err((errno, strerror, path.to_string())),
                None => PyOSError::new_err(format!("{path}: {msg}")),
            }
        }
        e => CaptureError::new_err(format!("{path}: {e}")),
    }
}

/// Sets `name` to `(dtype, bytes)`: the column's values little-endian (numpy's dtype string).
fn put<T: Copy, const N: usize>(
    d: &Bound<'_, PyDict>,
    name: &str,
    dtype: &str,
    v: &[T],
    le: impl Fn(T) -> [u8; N],
) -> PyResult<()> {
    let bytes = PyBytes::new(d.py(), &le_view(v, le));
    d.set_item(name, (dtype, bytes))
}

fn conns(v: &[transport::Conn]) -> Vec<(&str, u16, &str, u16)> {
    v.iter()
        .map(|c| (c.src.as_str(), c.sport, c.dst.as_str(), c.dport))
        .collect()
}

/// The TCP segments and SCTP packets of a pcap or pcapng file, in file order (with
/// `iface`: only that pcapng interface's, by name or number; never a frame the emulator
/// records as dropped). Keys: `tcp`, `sctp` (dicts of column name → (dtype, bytes)),
/// `tcp_conns`, `sctp_conns` (the connections the `conn` columns code), `frames`,
/// `other_links`, `iface_names`, `matched`, `truncated_at`, `section_comment`, `size`.
#[pyfunction]
#[pyo3(signature = (path, iface=None))]
fn capture_transport<'py>(
    py: Python<'py>,
    path: String,
    iface: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = path.clone();
    let t = py
        .detach(move || transport::read(Reader::open(Path::new(&p))?, iface.as_deref()))
        .map_err(|e| capture_err(&path, e))?;
    let out = PyDict::new(py);
    {
        let c = &t.tcp;
        let d = PyDict::new(py);
        put(&d, "ts_ns", "<i8", &c.ts_ns, i64::to_le_bytes)?;
        put(&d, "conn", "<i4", &c.conn, i32::to_le_bytes)?;
        put(&d, "seq", "<u4", &c.seq, u32::to_le_bytes)?;
        put(&d, "ack", "<u4", &c.ack, u32::to_le_bytes)?;
        put(&d, "flags", "<u1", &c.flags, u8::to_le_bytes)?;
        put(&d, "window", "<u2", &c.window, u16::to_le_bytes)?;
        put(&d, "length", "<i8", &c.length, i64::to_le_bytes)?;
        put(&d, "wire", "<i8", &c.wire, i64::to_le_bytes)?;
        put(&d, "has_ts", "<u1", &c.has_ts, u8::to_le_bytes)?;
        put(&d, "tsval", "<u4", &c.tsval, u32::to_le_bytes)?;
        put(&d, "tsecr", "<u4", &c.tsecr, u32::to_le_bytes)?;
        put(&d, "sack_count", "<u1", &c.sack_count, u8::to_le_bytes)?;
        put(&d, "sack_le0", "<u4", &c.sack_le0, u32::to_le_bytes)?;
        put(&d, "sack_re0", "<u4", &c.sack_re0, u32::to_le_bytes)?;
        put(&d, "sack_le1", "<u4", &c.sack_le1, u32::to_le_bytes)?;
        put(&d, "sack_re1", "<u4", &c.sack_re1, u32::to_le_bytes)?;
        put(&d, "iface", "<u4", &c.iface, u32::to_le_bytes)?;
        put(&d, "direction", "<u1", &c.direction, u8::to_le_bytes)?;
        out.set_item("tcp", d)?;
    }
    {
        let c = &t.sctp;
        let d = PyDict::new(py);
        put(&d, "ts_ns", "<i8", &c.ts_ns, i64::to_le_bytes)?;
        put(&d, "conn", "<i4", &c.conn, i32::to_le_bytes)?;
        put(&d, "wire", "<i8", &c.wire, i64::to_le_bytes)?;
        put(&d, "has_cum", "<u1", &c.has_cum, u8::to_le_bytes)?;
        put(&d, "cum_tsn", "<u4", &c.cum_tsn, u32::to_le_bytes)?;
        put(&d, "data_offsets", "<i8", &c.data_offsets, i64::to_le_bytes)?;
        put(&d, "chunk_tsn", "<u4", &c.chunk_tsn, u32::to_le_bytes)?;
        put(&d, "chunk_bytes", "<i8", &c.chunk_bytes, i64::to_le_bytes)?;
        put(&d, "dup_offsets", "<i8", &c.dup_offsets, i64::to_le_bytes)?;
        put(&d, "dup_tsn", "<u4", &c.dup_tsn, u32::to_le_bytes)?;
        put(&d, "iface", "<u4", &c.iface, u32::to_le_bytes)?;
        put(&d, "direction", "<u1", &c.direction, u8::to_le_bytes)?;
        out.set_item("sctp", d)?;
    }
    out.set_item("tcp_conns", conns(&t.tcp_conns))?;
    out.set_item("sctp_conns", conns(&t.sctp_conns))?;
    out.set_item("frames", t.frames)?;
    out.set_item("other_links", &t.other_links)?;
    out.set_item("iface_names", &t.iface_names)?;
    out.set_item("matched", t.matched)?;
    out.set_item("truncated_at", t.truncated_at)?;
    out.set_item("section_comment", &t.section_comment)?;
    out.set_item("size", t.size)?;
    Ok(out)
}

/// Every frame of a pcap or pcapng file, in file order, as columns: `ts_ns`, `linktype`,
/// `iface`, `direction`, `orig_len`, `iface_name` (codes into `iface_names`), each (dtype,
/// bytes); `data` and `comment` (bytes, the comments as UTF-8 with replacement) with
/// `data_offsets` and `comment_offsets` (n + 1 values); `section_comment`, `truncated_at`,
/// `size`. The whole capture is in memory: for tests and tools; an import reads
/// `capture_transport`.
#[pyfunction]
fn capture_frames<'py>(py: Python<'py>, path: String) -> PyResult<Bound<'py, PyDict>> {
    #[derive(Default)]
    struct Cols {
        ts_ns: Vec<i64>,
        linktype: Vec<u32>,
        iface: Vec<u32>,
        direction: Vec<u8>,
        orig_len: Vec<u32>,
        data: Vec<u8>,
        data_offsets: Vec<i64>,
        comment: Vec<u8>,
        comment_offsets: Vec<i64>,
        iface_name: Vec<i32>,
        names: Vec<String>,
        section_comment: String,
        truncated_at: Option<u64>,
        size: u64,
    }
    let p = path.clone();
    let c = py
        .detach(move || -> Result<Cols, capture::Error> {
            let mut r = Reader::open(Path::new(&p))?;
            let mut c = Cols {
                data_offsets: vec![0],
                comment_offsets: vec![0],
                ..Cols::default()
            };
            while let Some(f) = r.next_frame()? {
                c.ts_ns.push(f.ts_ns as i64);
                c.linktype.push(f.linktype);
                c.iface.push(f.iface);
                c.direction.push(f.direction);
                c.orig_len.push(f.orig_len);
                c.data.extend_from_slice(f.data);
                c.data_offsets.push(c.data.len() as i64);
                c.comment
                    .extend_from_slice(String::from_utf8_lossy(f.comment).as_bytes());
                c.comment_offsets.push(c.comment.len() as i64);
                let code = match c.names.iter().position(|n| n == f.iface_name) {
                    Some(i) => i,
                    None => {
                        c.names.push(f.iface_name.to_string());
                        c.names.len() - 1
                    }
                };
                c.iface_name.push(code as i32);
            }
            c.section_comment = r.section_comment().to_string();
            c.truncated_at = r.truncated_at();
            c.size = r.size();
            Ok(c)
        })
        .map_err(|e| capture_err(&path, e))?;
    let out = PyDict::new(py);
    put(&out, "ts_ns", "<i8", &c.ts_ns, i64::to_le_bytes)?;
    put(&out, "linktype", "<u4", &c.linktype, u32::to_le_bytes)?;
    put(&out, "iface", "<u4", &c.iface, u32::to_le_bytes)?;
    put(&out, "direction", "<u1", &c.direction, u8::to_le_bytes)?;
    put(&out, "orig_len", "<u4", &c.orig_len, u32::to_le_bytes)?;
    put(
        &out,
        "data_offsets",
        "<i8",
        &c.data_offsets,
        i64::to_le_bytes,
    )?;
    put(
        &out,
        "comment_offsets",
        "<i8",
        &c.comment_offsets,
        i64::to_le_bytes,
    )?;
    put(&out, "iface_name", "<i4", &c.iface_name, i32::to_le_bytes)?;
    out.set_item("data", PyBytes::new(py, &c.data))?;
    out.set_item("comment", PyBytes::new(py, &c.comment))?;
    out.set_item("iface_names", c.names)?;
    out.set_item("section_comment", c.section_comment)?;
    out.set_item("truncated_at", c.truncated_at)?;
    out.set_item("size", c.size)?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let ty = m.py().get_type::<CaptureError>();
    ty.setattr("__module__", "spikelab._core")?;
    ty.setattr("__name__", "CaptureError")?;
    ty.setattr("__qualname__", "CaptureError")?;
    m.add("CaptureError", ty)?;
    m.add_function(wrap_pyfunction!(capture_transport, m)?)?;
    m.add_function(wrap_pyfunction!(capture_frames, m)?)?;
    Ok(())
}
