#!/usr/bin/env python3
"""Independent reference figures for replay's tests.

Reads an Apache combined log with Python's own datetime parsing (not
tollgate's parser), sorts the requests by time (stable, so equal seconds
keep file order), and computes every figure the tests assert by direct,
naive implementations of each algorithm written from their published
definitions (fixed windows aligned to the epoch; the exact sliding log;
Cloudflare's two-counter estimate; GCRA as in golang.org/x/time/rate;
nginx limit_req's excess arithmetic). Usage: reference.py FILE [LIMIT WINDOW_SECONDS]
(default 60 60).
"""
import collections, datetime, math, sys

S = 10**9
reqs = []
for n, line in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace")):
    try:
        ip = line.split(" ", 1)[0]
        ts = line[line.index("[") + 1:line.index("]")]
        t = int(datetime.datetime.strptime(ts, "%d/%b/%Y:%H:%M:%S %z").timestamp()) * S
    except ValueError:
        continue
    reqs.append((t, n, ip))
reqs.sort()
count = collections.Counter(ip for _, _, ip in reqs)
busiest = sorted(count.items(), key=lambda kv: (-kv[1], kv[0]))
print("requests", len(reqs), "keys", len(count), "busiest", busiest[:3])

def stamp(t):
    return datetime.datetime.fromtimestamp(t // S, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

def report(name, decide):
    refused = collections.Counter()
    first = {}
    for t, _, ip in reqs:
        if not decide(ip, t):
            refused[ip] += 1
            first.setdefault(ip, t)
    total = sum(refused.values())
    top = sorted(refused.items(), key=lambda kv: (-kv[1], kv[0]))
    print(name, "refused", total, "keys", len(refused),
          "top", [(k, v, stamp(first[k])) for k, v in top[:3]])
    return refused

L = int(sys.argv[2]) if len(sys.argv) > 2 else 60
W = (int(sys.argv[3]) if len(sys.argv) > 3 else 60) * S

def fixed_window(lim=None):
    lim = lim or L
    counts = collections.Counter()
    def d(ip, t):
        k = (ip, t // W)
        if counts[k] + 1 > lim:
            return False
        counts[k] += 1
        return True
    return d

def sliding_log(lim=None):
    lim = lim or L
    logs = collections.defaultdict(collections.deque)
    def d(ip, t):
        q = logs[ip]
        while q and q[0] <= t - W:
            q.popleft()
        if len(q) + 1 > lim:
            return False
        q.append(t)
        return True
    return d

def sliding_window(lim=None):
    lim = lim or L
    counts = collections.Counter()
    def d(ip, t):
        i = t // W
        cur, prev = counts[(ip, i)], counts[(ip, i - 1)]
        e = t - i * W
        # estimate = prev*(W-e)/W + cur; allowed iff estimate + 1 - 1 < lim
        if prev * (W - e) < (lim - cur) * W:
            counts[(ip, i)] += 1
            return True
        return False
    return d

def token_bucket(rate_per_s, burst):
    T = S // rate_per_s
    tat = collections.defaultdict(int)
    def d(ip, t):
        x = max(tat[ip], t) + T
        if x - burst * T > t:
            return False
        tat[ip] = x
        return True
    return d

def leaky_bucket(rate_per_s, burst):
    T = S // rate_per_s
    state = {}
    def d(ip, t):
        if ip not in state:
            state[ip] = (0, t)
            return True
        excess, last = state[ip]
        e = max(excess - (t - last) + T, 0)
        if e > burst * T:
            return False
        state[ip] = (e, t)
        return True
    return d

report("fixed_window(L/W)", fixed_window())
report("sliding_log(L/W)", sliding_log())
report("token_bucket(1/s,20)", token_bucket(1, 20))
report("leaky_bucket(1/s,10,police)", leaky_bucket(1, 10))

# Sliding window counter against the exact log, each with its own state.
c, x = sliding_window(), sliding_log()
differ = fa = fr = refused = 0
for t, _, ip in reqs:
    a, b = c(ip, t), x(ip, t)
    refused += not a
    if a != b:
        differ += 1
        fa += a and not b
        fr += b and not a
print("sliding_window(L/W) refused", refused, "differ", differ, "false_allow", fa, "false_refuse", fr)

# Worst seam burst of the fixed window: admitted requests of one key in
# any (t-W, t].
fw = fixed_window()
adm = collections.defaultdict(collections.deque)
best = (0, None)
for t, _, ip in reqs:
    if fw(ip, t):
        q = adm[ip]
        q.append(t)
        while q[0] <= t - W:
            q.popleft()
        if len(q) > best[0]:
            best = (len(q), ip, stamp(q[0]), stamp(t))
print("seam", best)

# Peak rates: most requests of one key in one calendar second / minute.
sec = collections.Counter((ip, t // S) for t, _, ip in reqs)
mnt = collections.Counter((ip, t // (60 * S)) for t, _, ip in reqs)
psec, pmin = collections.Counter(), collections.Counter()
for (ip, _), v in sec.items():
    psec[ip] = max(psec[ip], v)
for (ip, _), v in mnt.items():
    pmin[ip] = max(pmin[ip], v)
print("peak per second max", max(psec.values()), "per minute max", max(pmin.values()))
for ip, _ in busiest[:3]:
    print("  peaks", ip, psec[ip], pmin[ip])

# Suggestions for the 10 busiest keys, by brute force: the smallest limit
# (or burst) under which the simulation above refuses none of their
# requests, found by binary search (refusal-free is monotone in it).
top = set(ip for ip, _ in busiest[:10])

def smallest(make):
    def ok(n):
        d = make(n)
        return all(d(ip, t) or ip not in top for t, _, ip in reqs)
    lo, hi = 1, 1
    while not ok(hi):
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo

print("suggest fixed_window limit", smallest(fixed_window))
print("suggest sliding_log limit", smallest(sliding_log))
print("suggest sliding_window limit", smallest(sliding_window))
print("suggest token_bucket(1/s) burst", smallest(lambda n: token_bucket(1, n)))
print("suggest leaky_bucket(1/s) burst", smallest(lambda n: leaky_bucket(1, n)))
