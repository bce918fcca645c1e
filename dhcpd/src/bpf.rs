//! The socket's classic BPF filter: a port of `fastpath._bpf_program()`, instruction by
//! instruction, so the kernel queues exactly the frames the Python reader would get.

use libc::sock_filter;

const LD_W_ABS: u16 = 0x20;
const LD_H_ABS: u16 = 0x28;
const LD_B_ABS: u16 = 0x30;
const LDX_MSH: u16 = 0xB1;
const LD_H_IND: u16 = 0x48;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const SKF_AD_OFF: i32 = -0x1000;
const SKF_AD_PKTTYPE: i32 = 4;
const SKF_AD_VLAN_TAG_PRESENT: i32 = 48;
const PACKET_OUTGOING: u32 = 4;
const MARK: u32 = 0x0e68_7700;
const ETH_IP: u32 = 0x0800;
const PROTO_UDP: u32 = 17;
const SERVER_PORT: u32 = 67;

/// Jump target placeholder, resolved to the final `ret 0` like the Python "drop".
const DROP: i32 = -1;

/// Pass (whole) only frames the switch marked: received (not our own sends), untagged,
/// eth_dst starting with the marker, IPv4, UDP, not a later fragment, to port 67.
pub fn program() -> Vec<sock_filter> {
    let ins: [(u16, i32, i32, u32); 17] = [
        (LD_W_ABS, 0, 0, (SKF_AD_OFF + SKF_AD_PKTTYPE) as u32),
        (JEQ_K, DROP, 0, PACKET_OUTGOING),
        (LD_W_ABS, 0, 0, (SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT) as u32),
        (JEQ_K, 0, DROP, 0),
        (LD_W_ABS, 0, 0, 0), // eth_dst[0..3]
        (JEQ_K, 0, DROP, MARK),
        (LD_H_ABS, 0, 0, 12), // ethertype
        (JEQ_K, 0, DROP, ETH_IP),
        (LD_B_ABS, 0, 0, 23), // IPv4 protocol
        (JEQ_K, 0, DROP, PROTO_UDP),
        (LD_H_ABS, 0, 0, 20), // flags + fragment offset
        (JSET_K, DROP, 0, 0x1FFF),
        (LDX_MSH, 0, 0, 14), // X = IPv4 header length
        (LD_H_IND, 0, 0, 16), // UDP destination port (14 + X + 2)
        (JEQ_K, 0, DROP, SERVER_PORT),
        (RET_K, 0, 0, 0xFFFF),
        (RET_K, 0, 0, 0), // drop
    ];
    let drop = ins.len() - 1;
    let target = |pc: usize, j: i32| -> u8 {
        if j == DROP {
            (drop - pc - 1) as u8
        } else {
            j as u8
        }
    };
    ins.iter()
        .enumerate()
        .map(|(pc, &(code, jt, jf, k))| sock_filter { code, jt: target(pc, jt), jf: target(pc, jf), k })
        .collect()
}

#[cfg(test)]
/// The program as `struct.pack("HBBI", ...)` lays it out (native order, x86/ARM: little).
pub fn bytes(prog: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prog.len() * 8);
    for ins in prog {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fastpath.bpf_bytes().hex()` (tools/fixtures.py), on a little-endian host.
    const PYTHON: &str = "2000000004f0ffff15000e00040000002000000030f0ffff1500000c0000000020000000000000001500000a0077680e280000000c000000150000080008000030000000170000001500000611000000280000001400000045000400ff1f0000b10000000e0000004800000010000000150000014300000006000000ffff00000600000000000000";

    #[test]
    #[cfg(target_endian = "little")]
    fn same_program_as_python() {
        let hex: String = bytes(&program()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, PYTHON);
    }

    #[test]
    fn every_drop_jump_lands_on_ret_zero() {
        let prog = program();
        let last = prog.len() - 1;
        let ret = prog[last];
        assert_eq!((ret.code, ret.jt, ret.jf, ret.k), (RET_K, 0, 0, 0));
        for (pc, ins) in prog.iter().enumerate().filter(|(_, ins)| ins.code & 0x07 == 0x05) {
            for j in [ins.jt, ins.jf] {
                assert!(pc + 1 + j as usize <= last);
            }
        }
        assert_eq!(std::mem::size_of::<sock_filter>(), 8);
    }
}
