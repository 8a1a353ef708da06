//! The `event` column of the packets table: its names and their dictionary codes, shared by
//! the simulator and the emulator's capture analysis so both tables read the same.

pub const NAMES: [&str; 7] = [
    "send",
    "retransmit",
    "ack",
    "stage_enter",
    "stage_exit",
    "drop",
    "deliver",
];
pub const SEND: i32 = 0;
pub const RETX: i32 = 1;
pub const ACK: i32 = 2;
pub const ENTER: i32 = 3;
pub const EXIT: i32 = 4;
pub const DROP: i32 = 5;
pub const DELIVER: i32 = 6;
