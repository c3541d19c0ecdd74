"""A job that stays busy: a progress line every 0.2 s for up to SECONDS (default 300). Its own
stall timeout would never fire; only a peer's notice stops it early."""
import sys
import time

end = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 300)
i = 0
while time.time() < end:
    print(f"iter {i}: loss 0.{i % 97:02d}", flush=True)
    i += 1
    time.sleep(0.2)
