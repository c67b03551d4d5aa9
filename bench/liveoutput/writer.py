# Writes SECS seconds of output at RATE MB/s (0: as fast as it can), in 100-byte lines; prints its own throughput to stderr... to a file.
import os, sys, time
rate = float(sys.argv[1]) * 1e6; secs = float(sys.argv[2]); out = sys.argv[3]
line = b"a" * 99 + b"\n"; chunk = line * 10000  # 1 MB
w = sys.stdout.buffer; start = time.time(); n = 0
while True:
    el = time.time() - start
    if el >= secs: break
    if rate > 0 and n > rate * el:
        time.sleep(0.001); continue
    w.write(chunk); n += len(chunk)
w.flush()
el = time.time() - start
open(out, "a").write("%.0f MB in %.2f s = %.1f MB/s\n" % (n / 1e6, el, n / 1e6 / el))
