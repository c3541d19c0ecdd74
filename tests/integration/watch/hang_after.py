"""A job that makes progress for SECONDS, then replays a real torch watchdog timeout (a hang
signature) and stays silent, as a rank stuck in a collective does."""
import sys
import time

end = time.time() + float(sys.argv[1])
i = 0
while time.time() < end:
    print(f"iter {i}: loss 0.{i % 97:02d}", flush=True)
    i += 1
    time.sleep(0.2)
with open(sys.argv[2]) as f:
    sys.stdout.write(f.read())
sys.stdout.flush()
time.sleep(300)
