//! The few Linux calls the daemon needs, declared by hand (std has no AF_PACKET) so the
//! crate builds with nothing fetched. Values from <linux/if_packet.h>, <asm-generic/socket.h>.

use std::ffi::CString;
use std::io;
use std::os::raw::{c_char, c_int, c_long, c_uint, c_ulong, c_void};

use crate::bpf::SockFilter;

pub const AF_PACKET: c_int = 17;
pub const SOCK_RAW: c_int = 3;
pub const SOCK_CLOEXEC: c_int = 0o2000000;
pub const SOL_SOCKET: c_int = 1;
pub const SO_RCVBUF: c_int = 8;
pub const SO_ATTACH_FILTER: c_int = 26;
pub const SO_RCVBUFFORCE: c_int = 33;
pub const SOL_PACKET: c_int = 263;
pub const PACKET_QDISC_BYPASS: c_int = 20;
pub const ETH_P_ALL: u16 = 0x0003;
pub const MSG_DONTWAIT: c_int = 0x40;
pub const MSG_NOSIGNAL: c_int = 0x4000;
pub const POLLIN: i16 = 0x001;
pub const POLLERR: i16 = 0x008;
pub const POLLHUP: i16 = 0x010;
pub const POLLNVAL: i16 = 0x020;
const SIGTERM: c_int = 15;

#[repr(C)]
pub struct PollFd {
    pub fd: c_int,
    pub events: i16,
    pub revents: i16,
}

#[repr(C)]
struct SockaddrLl {
    family: u16,
    protocol: u16,
    ifindex: c_int,
    hatype: u16,
    pkttype: u8,
    halen: u8,
    addr: [u8; 8],
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

extern "C" {
    fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, value: *const c_void, len: u32) -> c_int;
    fn bind(fd: c_int, addr: *const SockaddrLl, len: u32) -> c_int;
    fn send(fd: c_int, buf: *const c_void, len: usize, flags: c_int) -> isize;
    fn recv(fd: c_int, buf: *mut c_void, len: usize, flags: c_int) -> isize;
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn if_nametoindex(name: *const c_char) -> c_uint;
    fn signal(sig: c_int, handler: usize) -> usize;
    fn _exit(status: c_int) -> !;
}

fn check(ret: c_long) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

fn setopt(fd: c_int, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: value outlives the call; the kernel copies it.
    let ret = unsafe { setsockopt(fd, level, name, &value as *const c_int as *const c_void, 4) };
    check(ret as c_long).map(|_| ())
}

/// An owned file descriptor (closed on drop).
pub struct Fd(pub c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor.
        unsafe { close(self.0) };
    }
}

/// The raw socket, as `fastpath.open_socket`: the filter is attached before bind, so no
/// other frame is ever queued on it.
pub fn open_packet_socket(ifname: &str, prog: &[SockFilter], rcvbuf: c_int) -> io::Result<Fd> {
    let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: plain syscalls on values we own.
    let fd = Fd(check(unsafe { socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0) } as c_long)? as c_int);
    let fprog = SockFprog { len: prog.len() as u16, filter: prog.as_ptr() };
    let size = std::mem::size_of::<SockFprog>() as u32;
    // SAFETY: fprog points into `prog`, alive for the call; the kernel copies the program.
    check(unsafe { setsockopt(fd.0, SOL_SOCKET, SO_ATTACH_FILTER, &fprog as *const SockFprog as *const c_void, size) }
        as c_long)?;
    if setopt(fd.0, SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf).is_err() {
        // Without CAP_NET_ADMIN: capped by net.core.rmem_max, still better than the default.
        setopt(fd.0, SOL_SOCKET, SO_RCVBUF, rcvbuf)?;
    }
    // Replies skip br0's qdisc (the QoS tree): a reply must not wait behind a download.
    let _ = setopt(fd.0, SOL_PACKET, PACKET_QDISC_BYPASS, 1);
    // SAFETY: name is NUL-terminated.
    let ifindex = unsafe { if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error());
    }
    let addr = SockaddrLl {
        family: AF_PACKET as u16,
        protocol: ETH_P_ALL.to_be(),
        ifindex: ifindex as c_int,
        hatype: 0,
        pkttype: 0,
        halen: 0,
        addr: [0; 8],
    };
    // SAFETY: addr is a valid sockaddr_ll for the call.
    check(unsafe { bind(fd.0, &addr, std::mem::size_of::<SockaddrLl>() as u32) } as c_long)?;
    Ok(fd)
}

/// Non-blocking send of one frame/message; EPIPE (controller gone) is an error, not a
/// SIGPIPE: the EOF on the next read ends the process cleanly.
pub fn send_now(fd: c_int, data: &[u8]) -> io::Result<usize> {
    // SAFETY: data is a valid slice.
    check(unsafe { send(fd, data.as_ptr() as *const c_void, data.len(), MSG_DONTWAIT | MSG_NOSIGNAL) } as c_long)
}

/// Non-blocking receive of one frame/message.
pub fn recv_now(fd: c_int, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a valid, writable slice.
    check(unsafe { recv(fd, buf.as_mut_ptr() as *mut c_void, buf.len(), MSG_DONTWAIT) } as c_long)
}

pub fn poll_fds(fds: &mut [PollFd], timeout_ms: c_int) -> io::Result<usize> {
    // SAFETY: fds is a valid array of pollfd.
    check(unsafe { poll(fds.as_mut_ptr(), fds.len() as c_ulong, timeout_ms) } as c_long)
}

extern "C" fn on_sigterm(_sig: c_int) {
    // SAFETY: _exit is async-signal-safe; there is nothing to flush (state lives in the controller).
    unsafe { _exit(0) }
}

/// SIGTERM ends the process with status 0.
pub fn exit_on_sigterm() {
    // SAFETY: installing a handler that only calls _exit.
    unsafe { signal(SIGTERM, on_sigterm as extern "C" fn(c_int) as usize) };
}
