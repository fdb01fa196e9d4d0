"""What the two writers (tests/lib/flwriter.py, tests/lib/clwriter.py) share: the
pace of RATE writes per second (0: as fast as it can), the count of acknowledged
and failed writes, the longest time without an acknowledged write, and the JSON
summary they print on SIGTERM. Imported from the writers' own directory."""
import json
import sys
import time


class Pacer:
    def __init__(self, rate):
        self.period = 1.0 / rate if rate > 0 else 0
        self.acked = self.errors = 0
        self.last_ack = time.monotonic()
        self.max_gap = 0.0
        self.nxt = time.monotonic()

    def ack(self):
        """A write was acknowledged now."""
        now = time.monotonic()
        self.max_gap = max(self.max_gap, now - self.last_ack)
        self.last_ack = now
        self.acked += 1

    def wait(self):
        """Until the next write is due (at once when behind)."""
        if self.period:
            self.nxt += self.period
            d = self.nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            else:
                self.nxt = time.monotonic()

    def summary(self):
        """Prints {"acked", "errors", "max_gap_ms"} on stdout."""
        self.max_gap = max(self.max_gap, time.monotonic() - self.last_ack)
        print(json.dumps({"acked": self.acked, "errors": self.errors,
                          "max_gap_ms": round(self.max_gap * 1000, 1)}))
        sys.stdout.flush()
