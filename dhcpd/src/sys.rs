//! The few Linux calls the daemon needs that std does not wrap (AF_PACKET, the BPF filter,
//! poll, a SIGTERM handler), through the `libc` crate. Every `unsafe` block is one call.

use std::ffi::CString;
use std::io;
use std::mem::size_of;

use libc::{c_int, c_void, pollfd, sock_filter, sock_fprog, sockaddr, sockaddr_ll, socklen_t};

/// A libc return value: negative is the error in errno, otherwise a count.
fn check(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

fn setopt(fd: c_int, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: the pointer and length describe `value`, alive for the call; the kernel copies it.
    let ret = unsafe {
        libc::setsockopt(fd, level, name, (&value as *const c_int).cast::<c_void>(), size_of::<c_int>() as socklen_t)
    };
    check(ret as isize).map(|_| ())
}

/// An owned file descriptor (closed on drop).
pub struct Fd(pub c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and nothing uses it after the drop.
        unsafe { libc::close(self.0) };
    }
}

/// The raw socket, as `fastpath.open_socket`: the filter is attached before bind, so no
/// other frame is ever queued on it.
pub fn open_packet_socket(ifname: &str, prog: &[sock_filter], rcvbuf: c_int) -> io::Result<Fd> {
    let name = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: no pointers; the descriptor returned is owned by `Fd` from here on.
    let ret = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    let fd = Fd(check(ret as isize)? as c_int);
    // The kernel only reads the program (SO_ATTACH_FILTER copies it); `*mut` is libc's spelling.
    let fprog = sock_fprog { len: prog.len() as u16, filter: prog.as_ptr().cast_mut() };
    // SAFETY: the pointer and length describe `fprog`, which points into `prog`; both are alive
    // for the call and the kernel copies the program.
    let ret = unsafe {
        libc::setsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const sock_fprog).cast::<c_void>(),
            size_of::<sock_fprog>() as socklen_t,
        )
    };
    check(ret as isize)?;
    if setopt(fd.0, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, rcvbuf).is_err() {
        // Without CAP_NET_ADMIN: capped by net.core.rmem_max, still better than the default.
        setopt(fd.0, libc::SOL_SOCKET, libc::SO_RCVBUF, rcvbuf)?;
    }
    // Replies skip br0's qdisc (the QoS tree): a reply must not wait behind a download.
    let _ = setopt(fd.0, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1);
    // SAFETY: `name` is a NUL-terminated string alive for the call.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error());
    }
    let addr = sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: (libc::ETH_P_ALL as u16).to_be(),
        sll_ifindex: ifindex as c_int,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: the pointer and length describe `addr`, a complete sockaddr_ll alive for the call.
    let ret = unsafe {
        libc::bind(fd.0, (&addr as *const sockaddr_ll).cast::<sockaddr>(), size_of::<sockaddr_ll>() as socklen_t)
    };
    check(ret as isize)?;
    Ok(fd)
}

/// Non-blocking send of one frame/message; EPIPE (controller gone) is an error, not a
/// SIGPIPE: the EOF on the next read ends the process cleanly.
pub fn send_now(fd: c_int, data: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `data`, alive for the call; the kernel only reads it.
    check(unsafe { libc::send(fd, data.as_ptr().cast::<c_void>(), data.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) })
}

/// Non-blocking receive of one frame/message.
pub fn recv_now(fd: c_int, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, writable and alive for the call; the
    // kernel writes at most `buf.len()` bytes.
    check(unsafe { libc::recv(fd, buf.as_mut_ptr().cast::<c_void>(), buf.len(), libc::MSG_DONTWAIT) })
}

pub fn poll_fds(fds: &mut [pollfd], timeout_ms: c_int) -> io::Result<usize> {
    // SAFETY: the pointer and count describe `fds`, a writable array of pollfd alive for the call.
    let ret = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    check(ret as isize)
}

extern "C" fn on_sigterm(_sig: c_int) {
    // SAFETY: _exit is async-signal-safe; there is nothing to flush (state lives in the controller).
    unsafe { libc::_exit(0) }
}

/// SIGTERM ends the process with status 0.
pub fn exit_on_sigterm() {
    // SAFETY: the handler is an `extern "C" fn(c_int)` that only calls _exit, which is
    // async-signal-safe.
    unsafe { libc::signal(libc::SIGTERM, on_sigterm as extern "C" fn(c_int) as libc::sighandler_t) };
}
