"""scripts/audit_trim.py — a small audit file from a large one, for recording as a test fixture.

    python3 scripts/audit_trim.py IN.rla OUT.rla [--keep K]

Each record (one sub-group, docs/audit-format.md) becomes at most two: its first K and its last K
elements (K = 128 by default), each naming its first_element and the sub-group's subgroup_numel,
so that a replay still knows which elements took DeepSpeed's vector body and which its scalar
tail. Every optimizer replayed by ratiolab updates elements independently, so a slice replays
exactly as it did inside the whole. Only the Python standard library is used.
"""
import argparse
import struct
import zlib

HEADER = "<8sIIIIQ"
RECORD = "<IIIIIIiIqQddddddddddII"
HEAD = struct.calcsize(RECORD)


def records(buf):
    magic, version, hdr, n, crc, body = struct.unpack_from(HEADER, buf, 0)
    if magic != b"RLAUDIT\0" or version != 1 or zlib.crc32(buf[hdr:]) & 0xffffffff != crc:
        raise SystemExit("audit_trim: not a valid version-1 audit file")
    off = hdr
    for _ in range(n):
        f = list(struct.unpack_from(RECORD, buf, off))
        numel = f[9]
        arrays = [buf[off + HEAD + 4 * numel * k: off + HEAD + 4 * numel * (k + 1)] for k in range(7)]
        yield f, arrays
        off += f[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--keep", type=int, default=128)
    a = ap.parse_args()
    buf = open(a.inp, "rb").read()
    out = []
    for f, arrays in records(buf):
        numel, first, total = f[9], f[20], f[21]
        k = a.keep
        spans = [(0, numel)] if numel <= 2 * k else [(0, k), (numel - k, numel)]
        for lo, hi in spans:
            g = list(f)
            g[0] = HEAD + 28 * (hi - lo)
            g[9] = hi - lo
            g[20] = first + lo
            g[21] = total
            out.append(struct.pack(RECORD, *g) + b"".join(x[4 * lo:4 * hi] for x in arrays))
    body = b"".join(out)
    head = struct.pack(HEADER, b"RLAUDIT\0", 1, 32, len(out), zlib.crc32(body) & 0xffffffff, len(body))
    with open(a.out, "wb") as fo:
        fo.write(head + body)
    print("audit_trim: %d records, %d bytes -> %s" % (len(out), len(head) + len(body), a.out))


if __name__ == "__main__":
    main()
